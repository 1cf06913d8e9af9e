// The verifier's CloudFront plugin: the per-policy `cloudfront` section and the signed-cookie
// grant. The signer itself is the @secret-gate/cloudfront-signer package.

export {
  cloudFrontSection,
  cloudFrontSettings,
  loadCloudFrontKey,
  type CloudFrontGateConfig,
  type CloudFrontSettings,
} from './gate-config.js';
export {
  CLOUDFRONT_HEADERS,
  cloudFrontHeaders,
  createCloudFrontDecorator,
  createCloudFrontGrant,
  type CloudFrontCookieGrant,
  type CloudFrontDecorator,
} from './gate-decorator.js';

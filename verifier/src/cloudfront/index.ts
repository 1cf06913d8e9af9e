// CloudFront signed URLs and cookies: the signer, and the pieces the verifier wires into a policy.

export { createCloudFrontSigner } from './signer.js';
export type {
  CloudFrontCookies,
  CloudFrontSigner,
  CloudFrontSignerOptions,
  SignCookiesInput,
  SignedCookies,
  SignedUrl,
  SignUrlInput,
} from './signer.js';
export {
  cloudFrontAlgorithms,
  type CloudFrontAlgorithm,
  type PrivateKeyInput,
} from './signing-key.js';
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

// @secret-gate/cloudfront-signer: CloudFront signed URLs and cookies from a key imported once.
// The signer is the API; the two checks below are exported so that a caller validating its own
// configuration (the verifier's `cloudfront` section) refuses exactly what the signer would.

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
  readPrivateKey,
  type CloudFrontAlgorithm,
  type PrivateKeyInput,
} from './signing-key.js';
export { checkResourcePattern } from './resource.js';

// Turns the verifier's X-Auth-CF-* answer into CloudFront signed cookies. NGINX only relays what
// the verifier signed; values are checked so a malformed answer can never inject cookie syntax.

/**
 * @typedef {{
 *   policy?: string, signature?: string, keyPairId?: string,
 *   hashAlgorithm?: string, expires?: string, domain?: string, path?: string
 * }} CloudFrontGrant
 */

// CloudFront's URL-safe base64 uses `-`, `_` and `~`; key pair ids are upper-case alphanumerics.
var COOKIE_VALUE = /^[A-Za-z0-9\-_~+/=]+$/;
var HASH_ALGORITHM = /^SHA(1|256)$/;
var DOMAIN = /^\.?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$/;
var EPOCH_SECONDS = /^[0-9]{1,12}$/;
// RFC 6265 path-value, narrowed to the characters of a percent-encoded URL path: no `;`, no space.
var PATH = /^\/[A-Za-z0-9\-._~!$&'()+,=:@%/]{0,1023}$/;

/**
 * Builds the `Set-Cookie` values for a grant: `CloudFront-Policy`, `CloudFront-Signature`,
 * `CloudFront-Key-Pair-Id` and, when given, `CloudFront-Hash-Algorithm`. Returns an empty list
 * when the grant is absent, incomplete or malformed: no cookie is better than a broken one.
 * `expires` (epoch seconds) becomes the cookies' `Expires`; `domain` their `Domain`; `path` (the
 * resource's path, derived by the verifier) their `Path`, `/` when absent.
 * @param {CloudFrontGrant} grant
 * @returns {string[]}
 */
function cloudFrontCookies(grant) {
  var policy = grant.policy;
  var signature = grant.signature;
  var keyPairId = grant.keyPairId;
  if (!policy || !signature || !keyPairId) {
    return [];
  }
  if (
    !COOKIE_VALUE.test(policy) ||
    !COOKIE_VALUE.test(signature) ||
    !COOKIE_VALUE.test(keyPairId)
  ) {
    return [];
  }
  if (grant.hashAlgorithm && !HASH_ALGORITHM.test(grant.hashAlgorithm)) {
    return [];
  }
  if (grant.domain && !DOMAIN.test(grant.domain)) {
    return [];
  }
  if (grant.path && !PATH.test(grant.path)) {
    return [];
  }
  var attributes = '; Secure; HttpOnly; SameSite=Lax; Path=' + (grant.path || '/');
  if (grant.domain) {
    attributes += '; Domain=' + grant.domain;
  }
  if (grant.expires && EPOCH_SECONDS.test(grant.expires)) {
    attributes += '; Expires=' + new Date(Number(grant.expires) * 1000).toUTCString();
  }
  var cookies = [
    'CloudFront-Policy=' + policy + attributes,
    'CloudFront-Signature=' + signature + attributes,
    'CloudFront-Key-Pair-Id=' + keyPairId + attributes,
  ];
  if (grant.hashAlgorithm) {
    cookies.push('CloudFront-Hash-Algorithm=' + grant.hashAlgorithm + attributes);
  }
  return cookies;
}

export default { cloudFrontCookies };

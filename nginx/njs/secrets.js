// The njs content handler of /secret, behind the static fast path (secret-sets.js): it runs only
// after auth_request allowed the call, when CloudFront cookies must be set, in the at-start mode,
// or when the per-set files cannot be used. It picks the caller's set by the verifier's
// X-Auth-Issuer and X-Auth-Client and adds CloudFront cookies when granted.
import fs from 'fs';
import secretStore from './secret-store.js';
import cloudFront from './cloudfront-cookies.js';

/**
 * The object `js_preload_object sg_secrets from …` put in the global scope, if any.
 * @returns {unknown}
 */
function preloadedSecrets() {
  // @ts-ignore -- a global defined by NGINX, not by any module
  return typeof sg_secrets === 'undefined' ? undefined : sg_secrets;
}

/**
 * The secrets file as it is on disk now. Kubernetes replaces a mounted Secret by swapping a
 * symlink, so one read sees either the old or the new file, never a mix. Unreadable or not JSON →
 * undefined, which sendSecrets answers with 503.
 * @param {string} path
 * @returns {unknown}
 */
function readSecretsFile(path) {
  try {
    return JSON.parse(fs.readFileSync(path, 'utf8'));
  } catch (e) {
    return undefined;
  }
}

/**
 * Sends the caller's secret set as JSON. `Cache-Control: no-store` and the security headers come
 * from the location, so they are on every answer, denials included.
 * A broken secrets source answers 503 (never 500, never a partial set) and logs why, without values.
 * @param {NginxHTTPRequest} r
 * @param {unknown} file the preloaded secrets file
 * @param {string | undefined} envText the `SECRETS` environment variable
 */
function sendSecrets(r, file, envText) {
  var v = r.variables;
  var result = secretStore.resolveStore(file, envText, v.sg_secrets_issuer || '');
  if ('problem' in result) {
    r.error('secret-gate: secrets unavailable: ' + result.problem);
    r.headersOut['Content-Type'] = 'application/json';
    r.headersOut['Retry-After'] = '30';
    r.return(503, '{"error":"secrets_unavailable"}\n');
    return;
  }
  var set = secretStore.selectSecretSet(result.store, v.sg_auth_issuer, v.sg_auth_client);
  var cookies = cloudFront.cloudFrontCookies({
    policy: v.sg_cf_policy,
    signature: v.sg_cf_signature,
    keyPairId: v.sg_cf_key_pair_id,
    hashAlgorithm: v.sg_cf_hash_algorithm,
    expires: v.sg_cf_expires,
    domain: v.sg_cf_domain,
    path: v.sg_cf_path,
  });
  if (cookies.length > 0) {
    r.headersOut['Set-Cookie'] = cookies;
  }
  r.headersOut['Content-Type'] = 'application/json';
  r.return(200, JSON.stringify(set) + '\n');
}

/**
 * `js_content secrets.respond;`
 * @param {NginxHTTPRequest} r
 */
function respond(r) {
  var v = r.variables;
  var file =
    v.sg_secrets_read === 'at-start'
      ? preloadedSecrets()
      : readSecretsFile(v.sg_secrets_file || '');
  sendSecrets(r, file, process.env.SECRETS);
}

export default { respond, sendSecrets };

// secret-gate: guards the DPoP proof the verifier gets (RFC 9449 §4.3 step 1: exactly one).
// NGINX 1.22's $http_dpop is the first of several DPoP headers, and the verifier cannot read a
// request over 4 KiB (uWebSockets.js), so this returns the one proof, or a marker the verifier
// refuses with a DPoP challenge when there are several or the credentials are too large.

/** Largest proof passed on; the verifier refuses larger ones too (verifier/src/dpop/proof.ts). */
const MAX_PROOF_BYTES = 2048;
/** Authorization + DPoP together must leave room for the other headers under uWS's 4 KiB. */
const MAX_CREDENTIALS_BYTES = 3800;
/** Not a compact JWS, so the verifier's proof check refuses it. */
const REFUSED = 'refused:repeated-or-oversized';

/** @param {NginxHTTPRequest} r */
function proof(r) {
  var found = '';
  var count = 0;
  var raw = r.rawHeadersIn;
  for (var i = 0; i < raw.length; i++) {
    if (raw[i][0].toLowerCase() === 'dpop') {
      count++;
      found = raw[i][1];
    }
  }
  if (count === 0) return '';
  var authorization = r.headersIn.Authorization || '';
  if (count > 1 || found.length > MAX_PROOF_BYTES) return REFUSED;
  if (found.length + authorization.length > MAX_CREDENTIALS_BYTES) return REFUSED;
  return found;
}

export default { proof, REFUSED, MAX_PROOF_BYTES };

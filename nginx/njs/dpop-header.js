// secret-gate: guards the DPoP proof the verifier gets (RFC 9449 §4.3 step 1: exactly one).
// NGINX 1.22's $http_dpop is the first of several DPoP headers, so this returns the one proof, or
// a marker the verifier refuses with a DPoP challenge when there are several or the proof is too
// large. With one Authorization line (24k buffer) the verifier's 32 KiB request head still fits.

/** Largest proof passed on; the verifier refuses larger ones too (verifier/src/dpop/proof.ts). */
const MAX_PROOF_BYTES = 2048;
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
  if (count > 1 || found.length > MAX_PROOF_BYTES) return REFUSED;
  return found;
}

export default { proof, REFUSED, MAX_PROOF_BYTES };

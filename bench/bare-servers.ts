// The floors the verifier benches measure it against: uWebSockets.js servers with nothing of the
// verifier in them, each a Node `-e` source listening on 127.0.0.1:PORT (NODE_PATH must reach
// node_modules). Each answers its readiness probe like the verifier's /readyz.

/** The bare uWS 204: what any uWS server pays per request. */
export const BARE_UWS = `
const uws = require('uWebSockets.js');
if (typeof uws.getParts !== 'function') { console.error('uWS native addon not loaded'); process.exit(1); }
uws.App().any('/*', (res) => { res.writeStatus('204 No Content').endWithoutBody(); })
  .listen('127.0.0.1', Number(process.env.PORT), (ok) => { if (!ok) process.exit(1); });
`;

/**
 * The floor of a new token: the bare 204 plus the bare RS256 `crypto.verify` of the request's
 * bearer token (the key from JWK prepared once, the token split per request).
 */
export const UWS_TOKEN_VERIFY = `
const uws = require('uWebSockets.js');
const { createPublicKey, verify } = require('node:crypto');
const key = createPublicKey({ key: JSON.parse(process.env.JWK), format: 'jwk' });
uws.App().any('/*', (res, req) => {
  const token = req.getHeader('authorization').slice(7);
  const dot = token.lastIndexOf('.');
  const ok = dot > 0 && verify('sha256', Buffer.from(token.slice(0, dot)), key,
    Buffer.from(token.slice(dot + 1), 'base64url'));
  res.writeStatus(ok ? '204 No Content' : '401 Unauthorized').endWithoutBody();
}).listen('127.0.0.1', Number(process.env.PORT), (ok) => { if (!ok) process.exit(1); });
`;

/**
 * The floor of a DPoP request: the bare 204 after the ES256 `crypto.verify` of the request's
 * proof (the proof key from PROOF_JWK prepared once): the HTTP exchange at the rate a signature
 * check per request allows, with nothing of the verifier's own work.
 */
export const UWS_PROOF_VERIFY = `
const uws = require('uWebSockets.js');
const { createPublicKey, verify } = require('node:crypto');
if (typeof uws.getParts !== 'function') { console.error('uWS native addon not loaded'); process.exit(1); }
const key = { key: createPublicKey({ key: JSON.parse(process.env.PROOF_JWK), format: 'jwk' }), dsaEncoding: 'ieee-p1363' };
uws.App().any('/*', (res, req) => {
  const proof = req.getHeader('dpop');
  // The readiness probe comes without a proof.
  if (proof === '') return res.writeStatus('204 No Content').endWithoutBody();
  const dot = proof.lastIndexOf('.');
  const ok = verify('sha256', Buffer.from(proof.slice(0, dot), 'latin1'), key, Buffer.from(proof.slice(dot + 1), 'base64url'));
  if (ok) res.writeStatus('204 No Content').endWithoutBody();
  else res.writeStatus('401 Unauthorized').end();
}).listen('127.0.0.1', Number(process.env.PORT), (ok) => { if (!ok) process.exit(1); });
`;

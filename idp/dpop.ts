// DPoP at the dev IdP's token endpoint (RFC 9449 §5): a request that carries a valid proof gets an
// access token bound to the proof's key (`cnf.jkt`, `token_type: DPoP`); one without a proof
// gets a bearer token, as before. The proof is checked with the verifier's own proof checker
// (§4.3: `typ`, asymmetric `alg`, public `jwk`, signature, `htm`, `htu`, `iat`) and its `jti`
// may be used once.
import type { IncomingMessage } from 'node:http';
import { systemClock, type Clock } from '../verifier/src/clock.js';
import { createProofChecker } from '../verifier/src/dpop/proof.js';
import { createMemoryReplayStore } from '../verifier/src/dpop/replay-store.js';
import { VerifyError } from '../verifier/src/errors.js';

export const IDP_DPOP_ALGORITHMS = ['ES256', 'ES384', 'PS256', 'RS256', 'EdDSA'] as const;
const IAT_WINDOW_SECONDS = 60;

export type ProofOutcome =
  | { readonly ok: true; readonly jkt: string }
  | { readonly ok: false; readonly description: string };

/** Checks the `DPoP` header of a token request; `tokenEndpoint` is this IdP's public URL for it. */
export function createTokenProofReader(now: Clock = systemClock) {
  const check = createProofChecker({
    algorithms: IDP_DPOP_ALGORITHMS,
    iatWindow: IAT_WINDOW_SECONDS,
    now,
  });
  const seen = createMemoryReplayStore({ maxEntries: 100_000, now });

  return async function readTokenProof(
    req: IncomingMessage,
    tokenEndpoint: string,
  ): Promise<ProofOutcome> {
    const header = req.headers.dpop;
    // Node joins repeated headers with ", ", which no compact JWS contains: refused below too.
    if (typeof header !== 'string' || header.length === 0)
      return { ok: false, description: 'exactly one DPoP header is required' };
    try {
      const proof = await check(header, { htm: req.method ?? '', htu: tokenEndpoint });
      if (!seen.remember(`${proof.jkt}.${proof.jti}`, IAT_WINDOW_SECONDS * 2))
        return { ok: false, description: 'the DPoP proof was used before' };
      return { ok: true, jkt: proof.jkt };
    } catch (error) {
      return {
        ok: false,
        description: error instanceof VerifyError ? error.message : 'the DPoP proof is not valid',
      };
    }
  };
}

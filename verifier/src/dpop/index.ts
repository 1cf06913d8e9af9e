// DPoP (RFC 9449) for the verifier: the per-request step built from the configuration, with
// proof.ts, htu.ts, replay-store.ts, nonce.ts and challenge.ts as its parts.
import { hash } from 'node:crypto';
import type { DpopConfig } from '../config/model.js';
import { withHeaders, type DpopOutcome, type DpopStep } from '../decision/decision.js';
import { VerifyError, type DenyCode } from '../errors.js';
import type { Logger } from '../log.js';
import type { RedisSettings } from '../redis/connection.js';
import { dpopDenial } from './challenge.js';
import { externalUrl } from './htu.js';
import { createNonceSource } from './nonce.js';
import { createProofChecker } from './proof.js';
import { createRedisReplayStore } from './redis-replay-store.js';
import { createMemoryReplayStore } from './replay-store.js';

/**
 * The step runs after the token's decision (cached or fresh) on every request, so a cached token
 * never skips its proof (§7). It refuses a bound token as Bearer (no downgrade), DPoP with an
 * unbound token, a proof that fails proof.ts or is not by the `cnf.jkt` key (checked there before
 * any signature work), a missing or stale nonce (when on) and a `jti` seen before. A shared replay
 * store that does not answer fails `required` policies closed; `allowed` ones check replays in
 * process meanwhile.
 */
export function createDpopRuntime(
  config: DpopConfig,
  options: { now: () => number; logger: Logger; redis: RedisSettings },
) {
  const { now, logger } = options;
  const { algorithms, iatWindow } = config;
  const algs = algorithms.join(' ');
  // A proof is acceptable for twice the window, so its `jti` is kept that long.
  const replayTtl = iatWindow * 2;
  const checkProof = createProofChecker({ algorithms, iatWindow, now });
  const nonces =
    config.nonceKey === undefined ? undefined : createNonceSource(config.nonceKey, iatWindow, now);
  const memory = createMemoryReplayStore({ maxEntries: config.replayMaxEntries, now });
  const store =
    config.replayStore === 'memory'
      ? memory
      : createRedisReplayStore({
          url: config.replayStore,
          redis: options.redis,
          onError: (message) => logger.warn({ err: message }, 'DPoP replay store unreachable'),
        });
  let lastStoreWarning = 0;
  const refuse = (code: DenyCode, detail: string | undefined, nonce?: string): DpopOutcome => ({
    decision: dpopDenial(code, { algs, nonce }),
    detail,
  });

  const step: DpopStep = async (mode, decision, { scheme, token }, request, jkt) => {
    if (decision.identity === undefined) {
      // The token was refused: a DPoP client (or a DPoP-only policy) gets a DPoP challenge.
      if ((scheme === 'dpop' || mode === 'required') && decision.outcome === 'deny')
        return refuse(decision.reason, undefined);
      return { decision, detail: undefined };
    }
    if (scheme === 'bearer') {
      if (jkt !== undefined) return refuse('dpop_binding_mismatch', 'DPoP-bound token as Bearer');
      if (mode === 'required') return refuse('dpop_required', 'bearer token on a DPoP policy');
      return { decision, detail: undefined };
    }
    if (jkt === undefined)
      return refuse('dpop_binding_mismatch', 'DPoP scheme with an unbound token');
    if (!request.dpop) return refuse('dpop_proof_missing', 'no DPoP header');
    const htu = externalUrl(request.originalOrigin, request.originalUri);
    if (htu === undefined)
      return refuse('dpop_proof_invalid', 'no external origin or path to check "htu" against');

    const expected = { htm: request.originalMethod ?? '', htu, accessToken: token, jkt };
    let checked;
    try {
      checked = await checkProof(request.dpop, expected);
    } catch (error) {
      // Anything else is a bug: the authorizer answers it as internal_error.
      if (!(error instanceof VerifyError)) throw error;
      return refuse(error.code, error.message);
    }
    if (nonces !== undefined && !nonces.isValid(checked.nonce))
      return refuse('dpop_nonce_required', 'no current server nonce', nonces.current());

    // Fixed-size store keys whatever the `jti`; one-shot `hash`, as for `ath`, on every proof.
    const key = hash('sha256', `${jkt}\u0000${checked.jti}`, 'base64url');
    let fresh: boolean;
    try {
      fresh = await store.remember(key, replayTtl);
    } catch (error) {
      const { message } = error as Error;
      const failedClosed = mode === 'required';
      // At most one line a second while the store is down.
      if (now() - lastStoreWarning >= 1000) {
        lastStoreWarning = now();
        logger.warn(
          { err: message, failedClosed },
          failedClosed
            ? 'DPoP replay store unreachable: proofs refused on required policies'
            : 'DPoP replay store unreachable: this process checks replays on its own meanwhile',
        );
      }
      if (failedClosed || store === memory) return refuse('dpop_replay_unavailable', message);
      try {
        fresh = memory.remember(key, replayTtl);
      } catch (memoryError) {
        return refuse('dpop_replay_unavailable', (memoryError as Error).message);
      }
    }
    if (!fresh) return refuse('dpop_proof_replayed', '"jti" was seen before');
    // Step-up (RFC 9470) for a DPoP client: asked in its own scheme, once its proof holds.
    if (decision.stepUp !== undefined)
      return {
        decision: dpopDenial(decision.reason as DenyCode, {
          algs,
          nonce: nonces?.current(),
          stepUp: decision.stepUp,
        }),
        detail: undefined,
      };
    return {
      decision: nonces ? withHeaders(decision, [['DPoP-Nonce', nonces.current()]]) : decision,
      detail: undefined,
    };
  };

  return {
    step,
    missingToken: dpopDenial('token_missing', { algs }),
    store,
    close: () => store.close(),
  };
}

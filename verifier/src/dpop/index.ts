// DPoP (RFC 9449) for the verifier: the per-request step built from the configuration, with
// proof.ts, htu.ts, replay-store.ts, nonce.ts and challenge.ts as its parts.
import { hash } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { DpopConfig, DpopMode } from '../config/model.js';
import { DpopRefusal, type DpopStep, type Header } from '../decision/decision.js';
import { VerifyError } from '../errors.js';
import type { Logger } from '../log.js';
import type { RedisSettings } from '../redis/connection.js';
import { dpopDenial } from './challenge.js';
import { externalUrl } from './htu.js';
import { createNonceSource } from './nonce.js';
import { createProofChecker, type CheckedProof } from './proof.js';
import { createRedisReplayStore } from './redis-replay-store.js';
import { createMemoryReplayStore } from './replay-store.js';

/**
 * The step runs for every accepted token (cached or fresh), so a cached token never skips its
 * proof (§7). It refuses a bound token as Bearer (no downgrade), DPoP with an
 * unbound token, a proof that fails proof.ts or is not by the `cnf.jkt` key (checked there before
 * any signature work), a missing or stale nonce (when on) and a `jti` seen before. A shared replay
 * store that does not answer fails `required` policies closed; `allowed` ones check replays in
 * process meanwhile.
 */
export function createDpopRuntime(
  config: DpopConfig,
  options: { now: Clock; logger: Logger; redis: RedisSettings },
): DpopStep & { readonly store: { isReady(): boolean }; close(): Promise<void> } {
  const { now, logger } = options;
  const { algorithms, iatWindow } = config;
  const algs = algorithms.join(' ');
  // A proof is acceptable for twice the window, so its `jti` is kept that long.
  const replayTtl = iatWindow * 2;
  const checkProof = createProofChecker({ algorithms, iatWindow, now });
  const nonces =
    config.nonceKey === undefined ? undefined : createNonceSource(config.nonceKey, iatWindow, now);
  const memory = createMemoryReplayStore({ maxEntries: config.replayMaxEntries, now });
  const { url } = options.redis;
  const store =
    url === undefined
      ? memory
      : createRedisReplayStore({
          url,
          redis: options.redis,
          onError: (message) => logger.warn({ err: message }, 'DPoP replay store unreachable'),
        });
  let lastStoreWarning = -Infinity;
  const NO_HEADERS: readonly Header[] = [];

  /**
   * A VerifyError of the proof check as the step's own refusal; anything else is a bug, passed on
   * for the authorizer to answer as internal_error.
   */
  const asRefusal = (error: unknown): never => {
    if (!(error instanceof VerifyError)) throw error;
    throw new DpopRefusal(error.code, error.message);
  };

  /**
   * The replay store could not answer: refused on `required` policies (and when the in-process
   * store itself is full), else this process's memory answers for it.
   */
  function storeFailed(error: unknown, mode: DpopMode, key: string): boolean {
    const { message } = error as Error;
    const failedClosed = mode === 'required';
    // At most one line a second while the store is down.
    if (now() - lastStoreWarning >= 1) {
      lastStoreWarning = now();
      logger.warn(
        { err: message, failedClosed },
        failedClosed
          ? 'DPoP replay store unreachable: proofs refused on required policies'
          : 'DPoP replay store unreachable: this process checks replays on its own meanwhile',
      );
    }
    if (failedClosed || store === memory) throw new DpopRefusal('dpop_replay_unavailable', message);
    try {
      return memory.remember(key, replayTtl);
    } catch (memoryError) {
      throw new DpopRefusal('dpop_replay_unavailable', (memoryError as Error).message);
    }
  }

  /** The answer once the store has said whether the `jti` is new: its headers, or a replay. */
  const answer = (fresh: boolean): readonly Header[] => {
    if (!fresh) throw new DpopRefusal('dpop_proof_replayed', '"jti" was seen before');
    return nonces ? [['DPoP-Nonce', nonces.current()]] : NO_HEADERS;
  };

  /** The nonce and the replay of a proof that passed; waits only for a shared store. */
  function afterProof(
    checked: CheckedProof,
    mode: DpopMode,
    jkt: string,
  ): readonly Header[] | Promise<readonly Header[]> {
    if (nonces !== undefined && !nonces.isValid(checked.nonce))
      throw new DpopRefusal('dpop_nonce_required', 'no current server nonce', nonces.current());

    // Fixed-size store keys whatever the `jti`; one-shot `hash`, as for `ath`, on every proof.
    const key = hash('sha256', `${jkt}\u0000${checked.jti}`, 'base64url');
    let fresh: boolean | Promise<boolean>;
    try {
      fresh = store.remember(key, replayTtl);
    } catch (error) {
      fresh = storeFailed(error, mode, key);
    }
    if (fresh instanceof Promise)
      return fresh.then(answer, (error: unknown) => answer(storeFailed(error, mode, key)));
    return answer(fresh);
  }

  /**
   * Synchronous when nothing has to wait: the proof's header seen before (its key imported) and
   * the replay store in memory. A new proof key or the shared store makes it a promise; the
   * checks, their order and their refusals are the same either way.
   */
  const check: DpopStep['check'] = (mode, { scheme, token }, request, jkt) => {
    if (scheme === 'bearer') {
      if (jkt !== undefined)
        throw new DpopRefusal('dpop_binding_mismatch', 'DPoP-bound token as Bearer');
      if (mode === 'required')
        throw new DpopRefusal('dpop_required', 'bearer token on a DPoP policy');
      return NO_HEADERS;
    }
    if (jkt === undefined)
      throw new DpopRefusal('dpop_binding_mismatch', 'DPoP scheme with an unbound token');
    if (!request.dpop) throw new DpopRefusal('dpop_proof_missing', 'no DPoP header');
    const htu = externalUrl(request.originalOrigin, request.originalUri);
    if (htu === undefined)
      throw new DpopRefusal(
        'dpop_proof_invalid',
        'no external origin or path to check "htu" against',
      );

    const expected = { htm: request.originalMethod ?? '', htu, accessToken: token, jkt };
    let checked: CheckedProof | Promise<CheckedProof>;
    try {
      checked = checkProof(request.dpop, expected);
    } catch (error) {
      return asRefusal(error);
    }
    if (checked instanceof Promise)
      return checked.then((proven) => afterProof(proven, mode, jkt), asRefusal);
    return afterProof(checked, mode, jkt);
  };

  return {
    check,
    challenge: (code, nonce, stepUp) => dpopDenial(code, { algs, nonce, stepUp }),
    store,
    close: () => store.close(),
  };
}

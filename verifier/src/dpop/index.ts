// DPoP (RFC 9449) for the verifier: builds the per-request step from the configuration. The parts
// live in small modules: proof.ts (one proof), htu.ts (the URL it must name), replay-store.ts and
// redis-replay-store.ts (used `jti`s), nonce.ts (stateless server nonces), challenge.ts (answers),
// binding.ts (the step itself).
import type { DpopConfig } from '../config/model.js';
import type { Decision } from '../decision/decision.js';
import type { Logger } from '../log.js';
import type { DpopStep } from '../decision/plugins.js';
import { createDpopStep } from './binding.js';
import { dpopDenial } from './challenge.js';
import { createNonceSource } from './nonce.js';
import { createProofChecker } from './proof.js';
import { createRedisReplayStore } from './redis-replay-store.js';
import { createMemoryReplayStore, type ReplayStore } from './replay-store.js';

export interface DpopRuntime {
  readonly step: DpopStep;
  readonly missingToken: Decision;
  readonly store: ReplayStore;
  close(): Promise<void>;
}

export function createDpopRuntime(
  config: DpopConfig,
  options: { now: () => number; logger: Logger },
): DpopRuntime {
  const { now, logger } = options;
  const fallback = createMemoryReplayStore({ maxEntries: config.replayMaxEntries, now });
  const store =
    config.replayStore === 'memory'
      ? fallback
      : createRedisReplayStore({
          url: config.replayStore,
          password: config.replayPassword,
          onError: (message) => logger.warn({ err: message }, 'DPoP replay store unreachable'),
        });
  let lastStoreWarning = 0;
  const step = createDpopStep({
    checkProof: createProofChecker({
      algorithms: config.algorithms,
      iatWindow: config.iatWindow,
      now,
    }),
    store,
    fallback,
    nonces:
      config.nonceKey === undefined
        ? undefined
        : createNonceSource({ key: config.nonceKey, windowSeconds: config.iatWindow, now }),
    algorithms: config.algorithms,
    iatWindow: config.iatWindow,
    onStoreError(message, failedClosed) {
      // At most one line a second while the store is down.
      if (now() - lastStoreWarning < 1000) return;
      lastStoreWarning = now();
      logger.warn(
        { err: message, failedClosed },
        failedClosed
          ? 'DPoP replay store unreachable: proofs refused on required policies'
          : 'DPoP replay store unreachable: this process checks replays on its own meanwhile',
      );
    },
  });
  return {
    step,
    // RFC 6750 §3.1 style: no token at all gets the challenge without an error code.
    missingToken: dpopDenial('token_missing', { algs: config.algorithms.join(' ') }),
    store,
    close: () => store.close(),
  };
}

// DPoP (RFC 9449) for the verifier: the per-request step built from the configuration. proof.ts
// checks one proof, htu.ts the URL it names, replay-store.ts remembers `jti`s, nonce.ts makes
// server nonces, challenge.ts renders the answers, binding.ts is the step itself.
import type { DpopConfig } from '../config/model.js';
import type { Logger } from '../log.js';
import { createDpopStep } from './binding.js';
import { dpopDenial } from './challenge.js';
import { createNonceSource } from './nonce.js';
import { createProofChecker } from './proof.js';
import { createRedisReplayStore } from './redis-replay-store.js';
import { createMemoryReplayStore } from './replay-store.js';

export function createDpopRuntime(
  config: DpopConfig,
  options: { now: () => number; logger: Logger },
) {
  const { now, logger } = options;
  const { algorithms, iatWindow } = config;
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
    checkProof: createProofChecker({ algorithms, iatWindow, now }),
    store,
    fallback,
    nonces:
      config.nonceKey === undefined
        ? undefined
        : createNonceSource({ key: config.nonceKey, windowSeconds: iatWindow, now }),
    algorithms,
    iatWindow,
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
    missingToken: dpopDenial('token_missing', { algs: algorithms.join(' ') }),
    store,
    close: () => store.close(),
  };
}

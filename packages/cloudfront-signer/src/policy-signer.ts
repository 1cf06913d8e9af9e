// Signs policy bytes with the imported key, choosing per call where the work runs.
// `crypto.subtle.sign` always hops to libuv's thread pool and back, which on a 2-core host costs
// about a fifth of an RSA-2048 signature (`npm run bench:cloudfront`): the price of parallelism.
// A call that arrives while no other is pending is therefore signed on the calling thread with
// node:crypto and the same key (no hop), and calls that arrive while one is pending go to the pool
// through WebCrypto, so a burst (`Promise.all`) spreads over every core. The inline call is
// deferred by one microtask so that a burst issued in one tick is seen as a burst.

import { sign as signOnThisThread, webcrypto } from 'node:crypto';
import { p1363ToDer } from './ecdsa-der.js';
import type { CloudFrontAlgorithm, SigningKey } from './signing-key.js';

export type PolicySigner = (policy: string) => Promise<Uint8Array>;

interface Strategy {
  readonly webCrypto: webcrypto.AlgorithmIdentifier | webcrypto.EcdsaParams;
  readonly nodeDigest: 'sha1' | 'sha256';
  readonly rawEcdsa: boolean;
}

const strategies: Readonly<Record<CloudFrontAlgorithm, Strategy>> = {
  'RSA-SHA1': { webCrypto: { name: 'RSASSA-PKCS1-v1_5' }, nodeDigest: 'sha1', rawEcdsa: false },
  'RSA-SHA256': { webCrypto: { name: 'RSASSA-PKCS1-v1_5' }, nodeDigest: 'sha256', rawEcdsa: false },
  'ECDSA-SHA256': {
    webCrypto: { name: 'ECDSA', hash: 'SHA-256' },
    nodeDigest: 'sha256',
    rawEcdsa: true,
  },
};

/**
 * Returns `signPolicy(policy) → signature bytes` (PKCS#1 v1.5 for RSA, DER for ECDSA).
 * Both execution paths produce the same encoding; RSA PKCS#1 v1.5 is deterministic, so they
 * produce the same bytes too.
 */
export function createPolicySigner(key: SigningKey): PolicySigner {
  const strategy = strategies[key.algorithm];
  const subtle = webcrypto.subtle;
  const nodeKey = strategy.rawEcdsa
    ? { key: key.keyObject, dsaEncoding: 'ieee-p1363' as const }
    : key.keyObject;
  const finish = strategy.rawEcdsa ? p1363ToDer : (signature: Uint8Array) => signature;
  let pending = 0;

  const settle = () => {
    pending--;
  };

  function signInline(data: Buffer): Uint8Array {
    return finish(signOnThisThread(strategy.nodeDigest, data, nodeKey));
  }

  async function signInPool(data: Buffer): Promise<Uint8Array> {
    return finish(new Uint8Array(await subtle.sign(strategy.webCrypto, key.cryptoKey, data)));
  }

  return function signPolicy(policy: string): Promise<Uint8Array> {
    const data = Buffer.from(policy, 'utf8');
    const alone = pending === 0;
    pending++;
    if (!alone) return signInPool(data).finally(settle);
    return new Promise<Uint8Array>((resolve, reject) => {
      queueMicrotask(() => {
        try {
          resolve(signInline(data));
        } catch (error) {
          reject(error);
        } finally {
          settle();
        }
      });
    });
  };
}

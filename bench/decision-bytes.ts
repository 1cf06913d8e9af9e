// Heap bytes per cached decision, by the byte: 100,000 verified tokens (as the JWS step hands them
// over: fresh strings from JSON.parse) put in the token cache, against the same cache holding the
// same keys with one shared value (the key and the LRU's own node, slots included). The difference
// is what the decision itself costs; then plain values built up field by field say what each
// field costs (short strings such as `user-12345` are internalised by V8's JSON parser, so a
// real `sub` of 36 characters adds about 12 + its length). Heap after a full GC (--expose-gc), so the figures are counts, not timings:
//   node --expose-gc --import tsx bench/decision-bytes.ts
import { hash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { createTokenCache } from '../verifier/src/token/token-cache.js';
import type { VerifiedToken } from '../verifier/src/token/verified-token.js';

const N = Number(process.env.BENCH_DECISIONS ?? 100_000);
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');
const now = Math.floor(Date.now() / 1000);
const bounds = { maxEntries: N, maxBytes: 256 * 1024 * 1024, maxTtl: 3600 };

/** The i-th token's verified shape, as the JWS step returns it (strings of its own). */
function verified(i: number): VerifiedToken {
  const claims = JSON.parse(
    `{"sub":"user-${i}","azp":"spa-demo","scope":"openid secrets:read","iss":"https://idp.example"}`,
  ) as { sub: string; azp: string; scope: string; iss: string };
  return {
    identity: {
      sub: claims.sub,
      client: claims.azp,
      scopes: claims.scope.split(' '),
      issuer: claims.iss,
    },
    exp: now + 3600,
    nbf: undefined,
    kid: JSON.parse('"bench-rsa"') as string,
    keyTrustedUntil: now + 600,
  };
}

// As token-verifier.ts keys a token: its SHA-256 as 32 latin1 characters.
const keyOf = (i: number) => hash('sha256', `token-${i}`, 'binary');

function heapAfter(fill: () => unknown): number {
  gc!();
  const before = process.memoryUsage().heapUsed;
  const held = fill();
  gc!();
  const used = process.memoryUsage().heapUsed - before;
  if (held === undefined) throw new Error('nothing held');
  return used / N;
}

const keysOnly = heapAfter(() => {
  const lru = new LRUCache<string, object>({ max: N, ttlResolution: 0 });
  const shared = {};
  for (let i = 0; i < N; i++) lru.set(keyOf(i), shared, { ttl: 3_600_000 });
  return lru;
});
const decisions = heapAfter(() => {
  const cache = createTokenCache({ ...bounds, now: () => now });
  for (let i = 0; i < N; i++) cache.set(keyOf(i), verified(i));
  return cache;
});
console.log(`${N} cached decisions, heap bytes per entry after a full GC`);
console.log(`  key + LRU node (one shared value): ${keysOnly.toFixed(0)}`);
console.log(`  token cache entry:                 ${decisions.toFixed(0)}`);
console.log(
  `  the decision itself:               ${(decisions - keysOnly).toFixed(0)} (goal ≤ 200)`,
);

// What each part costs: the same LRU, values built field by field (a literal, no spreads).
const shape = {
  client: 'spa-demo',
  scopes: ['openid', 'secrets:read'],
  issuer: 'https://idp.example',
};
const kid = 'bench-rsa';
const parts: [string, (i: number) => object][] = [
  ['an empty object', () => ({})],
  ['+ sub (its own string)', (i) => ({ sub: verified(i).identity.sub })],
  ['+ shared shape', (i) => ({ sub: verified(i).identity.sub, shape })],
  ['+ exp', (i) => ({ sub: verified(i).identity.sub, shape, exp: now + 3600 + (i % 7) })],
  [
    '+ nbf, kid (shared)',
    (i) => ({
      sub: verified(i).identity.sub,
      shape,
      exp: now + 3600 + (i % 7),
      nbf: undefined,
      kid,
    }),
  ],
  [
    '+ keyTrustedUntil',
    (i) => ({
      sub: verified(i).identity.sub,
      shape,
      exp: now + 3600 + (i % 7),
      nbf: undefined,
      kid,
      keyTrustedUntil: now + 600 + (i % 5),
    }),
  ],
];
for (const [label, make] of parts) {
  const bytes = heapAfter(() => {
    const lru = new LRUCache<string, object>({ max: N, ttlResolution: 0 });
    for (let i = 0; i < N; i++) lru.set(keyOf(i), make(i), { ttl: 3_600_000 });
    return lru;
  });
  console.log(`  ${label.padEnd(34)} ${(bytes - keysOnly).toFixed(0)}`);
}

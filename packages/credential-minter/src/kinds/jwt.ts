// `jwt`: a JWT the gate signs for the caller, HS256 over a shared secret or ES256 / RS256 / EdDSA
// with a private key whose public half the host publishes (`publicJwks`). Claims: `iss`, `sub`,
// `aud` from the entry, the templated `claims`, then `iat` and `exp` (min of TTL and token).

import type { EntryOf } from '../entry-schema.js';
import { asymmetricKey, hmacKey, signJwt, type JwsKey, type PublicJwk } from '../jws-key.js';
import { createKeyFile, parseTextSecret } from '../key-file.js';
import { expiryFor } from '../lifetime.js';
import { compileJsonTemplate, compileTemplate } from '../template.js';
import { syncMint } from '../sync-mint.js';
import type { Minter } from '../types.js';

/** The gate sets these itself; an entry's `claims` may not. */
const reserved = ['iss', 'sub', 'aud', 'iat', 'exp', 'nbf'];
/** RFC 7518 §3.2: an HS256 key of at least the hash's size. */
const minHmacBytes = 32;

export function createJwtMinter(entry: EntryOf<'jwt'>): Minter {
  for (const name of Object.keys(entry.claims ?? {})) {
    if (reserved.includes(name)) {
      throw new TypeError(`"claims.${name}" is set by the gate; use the entry's own field`);
    }
  }
  const readText = parseTextSecret('keyFile');
  const keyFile = createKeyFile(entry.keyFile, 'keyFile', (bytes): JwsKey => {
    if (entry.alg !== 'HS256') return asymmetricKey(bytes, entry.alg, 'keyFile', entry.kid);
    const secret = readText(bytes);
    if (Buffer.byteLength(secret) < minHmacBytes) {
      throw new TypeError(`"keyFile" must hold at least ${minHmacBytes} bytes for HS256`);
    }
    return hmacKey(secret, entry.kid);
  });
  const sub = entry.sub === '' ? undefined : compileTemplate(entry.sub ?? '{sub}', 'sub');
  const claims =
    entry.claims === undefined ? undefined : compileJsonTemplate(entry.claims, 'claims');
  const { iss, aud, ttlSeconds } = entry;

  let shown: JwsKey = keyFile.current();
  let before: PublicJwk | undefined;
  const currentKey = (): JwsKey => {
    const key = keyFile.current();
    if (key !== shown) {
      before = shown.publicJwk;
      shown = key;
    }
    return key;
  };

  return {
    kind: 'jwt',
    mint: syncMint((caller, now) => {
      const key = currentKey();
      const exp = expiryFor(caller, now, ttlSeconds);
      const payload = {
        ...(claims?.(caller) as Record<string, unknown> | undefined),
        iss,
        sub: sub?.(caller),
        aud,
        iat: Math.floor(now),
        exp,
      };
      return { value: signJwt(key, payload), expiresAt: exp };
    }),
    publicJwks() {
      if (entry.alg === 'HS256') return [];
      try {
        currentKey();
      } catch {
        // An unusable new file: keep publishing what last signed.
      }
      return [shown.publicJwk, before].filter((jwk): jwk is PublicJwk => jwk !== undefined);
    },
  };
}

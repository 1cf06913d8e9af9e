// `stream-chat-token`: a Stream Chat user token, the JWT the server SDK's `createToken` makes:
// HS256 with the app secret, claims `user_id`, `exp`, `iat` in that order.

import type { EntryOf } from '../entry-schema.js';
import { hmacKey, signJwt } from '../jws-key.js';
import { createKeyFile, parseTextSecret } from '../key-file.js';
import { expiryFor } from '../lifetime.js';
import { compileTemplate } from '../template.js';
import { syncMint } from '../sync-mint.js';
import type { Minter } from '../types.js';

export function createStreamChatMinter(entry: EntryOf<'stream-chat-token'>): Minter {
  const secret = createKeyFile(entry.secretFile, 'secretFile', (bytes) =>
    hmacKey(parseTextSecret('secretFile')(bytes)),
  );
  const userId = compileTemplate(entry.userId, 'userId');
  return {
    kind: 'stream-chat-token',
    mint: syncMint((caller, now) => {
      const key = secret.current();
      const exp = expiryFor(caller, now, entry.ttlSeconds);
      const value = signJwt(key, { user_id: userId(caller), exp, iat: Math.floor(now) });
      return { value, expiresAt: exp };
    }),
  };
}

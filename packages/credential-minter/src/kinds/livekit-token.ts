// `livekit-token`: a LiveKit access token, HS256 with the API secret: `iss` = the API key,
// `sub` = the identity, a `video` grant for one templated room, `nbf` and `exp`.

import type { EntryOf } from '../entry-schema.js';
import { hmacKey, signJwt } from '../jws-key.js';
import { createKeyFile, parseTextSecret } from '../key-file.js';
import { expiryFor } from '../lifetime.js';
import { compileTemplate } from '../template.js';
import { syncMint } from '../sync-mint.js';
import type { Minter } from '../types.js';

export function createLiveKitMinter(entry: EntryOf<'livekit-token'>): Minter {
  const secret = createKeyFile(entry.secretFile, 'secretFile', (bytes) =>
    hmacKey(parseTextSecret('secretFile')(bytes)),
  );
  const identity = compileTemplate(entry.identity, 'identity');
  const name = entry.name === undefined ? undefined : compileTemplate(entry.name, 'name');
  const room = compileTemplate(entry.room, 'room');
  const { apiKey, canPublish, canSubscribe, canPublishData } = entry;
  return {
    kind: 'livekit-token',
    mint: syncMint((caller, now) => {
      const key = secret.current();
      const exp = expiryFor(caller, now, entry.ttlSeconds);
      const sub = identity(caller);
      const payload = {
        video: { room: room(caller), roomJoin: true, canPublish, canSubscribe, canPublishData },
        name: name?.(caller),
        iss: apiKey,
        sub,
        jti: sub,
        nbf: Math.floor(now),
        exp,
      };
      return { value: signJwt(key, payload), expiresAt: exp };
    }),
  };
}

// The dev stack's minted values (docs/minted/README.md): `npm start` gives the `secret` policy a
// `mint` section, so the SPA shows a per-user value and its expiry beside the static `x-api-key`
// without any configuration. Its parent key is generated for the run (mode 0600, the run's config
// directory) and never leaves it. Tests and benches start without it, so their static sets stay
// static.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

/** Writes the run's parent keys with `writeKey` (0600) and returns the policy's `mint` section. */
export function mintedDemo(
  configDir: string,
  writeKey: (path: string, content: string) => void,
): Record<string, unknown> {
  const chatKey = join(configDir, 'mint-chat.key');
  writeKey(chatKey, randomBytes(32).toString('base64url'));
  return {
    // A gate-signed JWT naming the user, as a chat service's user token is (Stream Chat's shape).
    'chat-token': {
      kind: 'jwt',
      alg: 'HS256',
      keyFile: chatKey,
      ttlSeconds: 300,
      aud: 'dev-chat',
      claims: { user_id: '{sub}' },
    },
  };
}

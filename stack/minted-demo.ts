// The dev stack's minted values (docs/minted/README.md): `npm start` gives the `secret` policy a
// `mint` section, so the SPA shows per-user values and their expiry beside the static `x-api-key`
// without any configuration: an Algolia secured search key restricted to the user and an S3 upload
// URL for the user's own folder. Their parent keys are generated for the run (mode 0600, the
// run's config directory) and never leave it. Tests and benches start without it, so their static
// sets stay static. docker compose serves the same section (stack/compose/verifier.json), its keys
// made by stack/compose/minted-demo-keys.mjs on a volume at the verifier's first start.
import { join } from 'node:path';
import { MINTED_DEMO_KEY_FILES, mintedDemoKeys } from './compose/minted-demo-keys.mjs';

/** The names of the demo's minted values in the `secret` set (what the SPA and the stress profile read). */
export const MINTED_DEMO_VALUES = ['search-key', 'avatar-upload-url'] as const;

/** Seconds each demo value lives unless the start asks otherwise (the end-to-end test asks less). */
export const MINTED_DEMO_TTL_SECONDS = 300;

/** Where docker-compose.yaml's verifier keeps the demo's parent keys (the `mint-keys` volume). */
export const COMPOSE_MINT_KEY_DIR = '/var/lib/secret-gate';

/** Writes the run's parent keys with `writeKey` (0600) and returns the policy's `mint` section. */
export function mintedDemo(
  configDir: string,
  writeKey: (path: string, content: string) => void,
  ttlSeconds = MINTED_DEMO_TTL_SECONDS,
): Record<string, unknown> {
  for (const [name, content] of Object.entries(mintedDemoKeys()))
    writeKey(join(configDir, name), content);
  return mintedDemoSection(configDir, ttlSeconds);
}

/** The `secret` policy's `mint` section over parent keys in `keyDir` (stack/compose/verifier.json's too). */
export function mintedDemoSection(
  keyDir: string,
  ttlSeconds = MINTED_DEMO_TTL_SECONDS,
): Record<string, unknown> {
  return {
    // Search only the user's own records, for `ttlSeconds` (5 minutes by default) at most.
    'search-key': {
      kind: 'algolia-secured-key',
      parentKeyFile: join(keyDir, MINTED_DEMO_KEY_FILES.algolia),
      filters: 'owner:{sub}',
      userToken: '{sub}',
      ttlSeconds,
    },
    // Upload the user's avatar into their own folder of a local S3-compatible store (MinIO).
    'avatar-upload-url': {
      kind: 's3-presigned-url',
      method: 'PUT',
      bucket: 'dev-uploads',
      key: 'uploads/{sub}/avatar.png',
      endpoint: 'http://127.0.0.1:9000',
      forcePathStyle: true,
      credentialsFile: join(keyDir, MINTED_DEMO_KEY_FILES.s3),
      ttlSeconds,
    },
  };
}

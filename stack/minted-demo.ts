// The dev stack's minted values (docs/minted/README.md): `npm start` gives the `secret` policy a
// `mint` section, so the SPA shows per-user values and their expiry beside the static `x-api-key`
// without any configuration: an Algolia secured search key restricted to the user and an S3 upload
// URL for the user's own folder. Their parent keys are generated for the run (mode 0600, the
// run's config directory) and never leave it. Tests and benches start without it, so their static
// sets stay static.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

/** The names of the demo's minted values in the `secret` set (what the SPA and the stress profile read). */
export const MINTED_DEMO_VALUES = ['search-key', 'avatar-upload-url'] as const;

/** Seconds each demo value lives unless the start asks otherwise (the end-to-end test asks less). */
export const MINTED_DEMO_TTL_SECONDS = 300;

/** Writes the run's parent keys with `writeKey` (0600) and returns the policy's `mint` section. */
export function mintedDemo(
  configDir: string,
  writeKey: (path: string, content: string) => void,
  ttlSeconds = MINTED_DEMO_TTL_SECONDS,
): Record<string, unknown> {
  const algoliaKey = join(configDir, 'mint-algolia-parent.key');
  writeKey(algoliaKey, randomBytes(16).toString('hex'));
  const s3Credentials = join(configDir, 'mint-s3-credentials.json');
  writeKey(
    s3Credentials,
    JSON.stringify({
      accessKeyId: `AKIADEV${randomBytes(6).toString('hex').toUpperCase()}`,
      secretAccessKey: randomBytes(30).toString('base64'),
    }),
  );
  return {
    // Search only the user's own records, for `ttlSeconds` (5 minutes by default) at most.
    'search-key': {
      kind: 'algolia-secured-key',
      parentKeyFile: algoliaKey,
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
      credentialsFile: s3Credentials,
      ttlSeconds,
    },
  };
}

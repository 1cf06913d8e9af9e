// The parent keys of the dev stack's minted values (stack/minted-demo.ts, docs/minted/README.md):
// an Algolia parent search key and S3-style credentials, random for each new stack. `npm start`
// writes them into its run's config directory; under docker compose the verifier runs this file
// before it starts (`node minted-demo-keys.mjs DIR`), so they are made on the `mint-keys` volume at
// the first start and kept across restarts (`docker compose down -v` drops them). Never in an
// image, never printed: files are created owner-only (0600) and a file that exists is left alone.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The key files' names inside the directory. */
export const MINTED_DEMO_KEY_FILES = Object.freeze({
  algolia: 'mint-algolia-parent.key',
  s3: 'mint-s3-credentials.json',
});

/** Fresh key contents, by file name. */
export function mintedDemoKeys() {
  return {
    [MINTED_DEMO_KEY_FILES.algolia]: randomBytes(16).toString('hex'),
    [MINTED_DEMO_KEY_FILES.s3]: JSON.stringify({
      accessKeyId: `AKIADEV${randomBytes(6).toString('hex').toUpperCase()}`,
      secretAccessKey: randomBytes(30).toString('base64'),
    }),
  };
}

/** Creates each missing key file in `dir` (0600); existing ones are kept as they are. */
export function makeMissingKeys(dir) {
  for (const [name, content] of Object.entries(mintedDemoKeys())) {
    try {
      writeFileSync(join(dir, name), content, { mode: 0o600, flag: 'wx' });
    } catch (error) {
      if (error?.code !== 'EEXIST')
        throw new Error(`cannot write ${join(dir, name)}: ${error?.code}`);
    }
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2];
  if (!dir) {
    process.stderr.write('usage: node minted-demo-keys.mjs DIR\n');
    process.exit(2);
  }
  makeMissingKeys(dir);
}

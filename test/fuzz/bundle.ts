// Prepares what the fuzz image runs (test/fuzz/Dockerfile runs it in the image; nothing here needs
// the fuzzer): each *.fuzz.ts target bundled with esbuild into one CommonJS file, the form
// Jazzer.js instruments as it loads (its coverage hooks sit on require), beside the test keys the
// targets read; and each target's committed corpus (fuzz/corpus/*.json) as one file per input,
// the seed directory libFuzzer starts from. npm packages stay outside the bundle, loaded from
// node_modules, which Jazzer.js does not instrument: coverage counts the project's own code.
//
//   npx tsx test/fuzz/bundle.ts <out-dir>   → <out-dir>/targets/<name>.fuzz.cjs, <out-dir>/seeds/<name>/
// <out-dir> must be inside the checkout, so that the bundles find its node_modules.
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { readCorpus } from '../../fuzz/corpus.js';
import { FUZZ_TARGETS, parserOf } from './fuzz-target.js';

const [outDir] = process.argv.slice(2);
if (outDir === undefined) throw new TypeError('usage: bundle.ts <out-dir>');
const targetsDir = join(outDir, 'targets');

await build({
  entryPoints: FUZZ_TARGETS.map((name) =>
    fileURLToPath(new URL(`./${name}.fuzz.ts`, import.meta.url)),
  ),
  outdir: targetsDir,
  outExtension: { '.js': '.cjs' },
  bundle: true,
  // The workspace packages are bundled from their sources (tsconfig.json's paths), not their dist.
  packages: 'external',
  platform: 'node',
  format: 'cjs',
  target: 'node24',
  tsconfig: fileURLToPath(new URL('../../tsconfig.json', import.meta.url)),
  // A CommonJS file has no import.meta: the modules that find files beside themselves get the
  // bundle's own URL, so the keys are copied next to it below.
  define: { 'import.meta.url': 'bundleUrl' },
  banner: { js: "const bundleUrl = require('node:url').pathToFileURL(__filename).href;" },
  logLevel: 'warning',
});
copyFileSync(
  fileURLToPath(new URL('../../verifier/src/testing/keys.json', import.meta.url)),
  join(targetsDir, 'keys.json'),
);

for (const name of FUZZ_TARGETS) {
  const seeds = join(outDir, 'seeds', name);
  mkdirSync(seeds, { recursive: true });
  for (const { input } of readCorpus(parserOf(name))) {
    const file = createHash('sha1').update(input).digest('hex');
    writeFileSync(join(seeds, file), input);
  }
}

// A long fuzzing run of the three parsers in the Jazzer.js image (test/fuzz/lane.ts): each target
// in turn for --time seconds. Findings are printed and kept under --out; the exit code is 1 when
// any target found something. With --keep, findings that no longer crash and inputs reaching a new
// outcome join the committed corpus (test/fuzz/keep.ts). The CI lane (test/containers/fuzz.test.ts)
// is the short version.
//
//   npm run fuzz -- [--time 600] [--target jws --target jws-signed …] [--out test-results/fuzz] [--keep]
import { readdirSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { missingEngine } from '../containers/engine.js';
import { FUZZ_TARGETS, parserOf, type FuzzTargetName } from './fuzz-target.js';
import { keepInputs } from './keep.js';
import { buildFuzzImage, FUZZ_IMAGE, runFuzzTarget } from './lane.js';

const { values } = parseArgs({
  options: {
    time: { type: 'string', default: '600' },
    target: { type: 'string', multiple: true },
    out: { type: 'string', default: 'test-results/fuzz' },
    keep: { type: 'boolean', default: false },
  },
});
const seconds = Number(values.time);
if (!Number.isInteger(seconds) || seconds < 1) throw new TypeError('--time must be whole seconds');
const targets = (values.target ?? [...FUZZ_TARGETS]) as FuzzTargetName[];
const unknown = targets.filter((name) => !FUZZ_TARGETS.includes(name));
if (unknown.length > 0)
  throw new TypeError(`unknown --target ${unknown.join(', ')}; one of ${FUZZ_TARGETS.join(', ')}`);

const noEngine = await missingEngine();
if (noEngine) {
  console.error(`no container engine (${noEngine}); start one: bash test/containers/setup.sh`);
  process.exit(2);
}

console.log(`building ${FUZZ_IMAGE}`);
await buildFuzzImage();
let found = 0;
for (const target of targets) {
  console.log(`fuzzing ${target} for ${seconds} s`);
  const run = await runFuzzTarget(target, { seconds, outDir: values.out });
  const newInputs = readdirSync(run.corpus).length;
  console.log(
    `${target}: ${run.executions} inputs run from ${run.seeds} seed files, ${run.coverage} edges covered, ` +
      `${newInputs} new corpus inputs in ${run.corpus}, exit ${run.exitCode}`,
  );
  if (run.findings.length > 0 || run.exitCode !== 0) {
    found++;
    console.log(run.log.split('\n').slice(-60).join('\n'));
    for (const file of run.findings) console.log(`finding: ${file}`);
  }
  if (values.keep) {
    const { added, crashes } = await keepInputs(run);
    console.log(`${target}: ${added} inputs added to fuzz/corpus/${parserOf(target)}.json`);
    for (const file of crashes) console.log(`not kept, still crashes on this machine: ${file}`);
  }
}
process.exit(found > 0 ? 1 : 0);

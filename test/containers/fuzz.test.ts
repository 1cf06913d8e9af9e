// The short fuzzing lane: the Jazzer.js image (test/fuzz/Dockerfile, Node 24 on trixie: its
// libFuzzer addon needs glibc >= 2.38) built, then each fuzz target (test/fuzz/*.fuzz.ts) run for
// a bounded time from the committed corpus. A crash, a hang, a slow input or an input accepted
// without a trusted signature fails it; the input is left in test-results/fuzz/<target>/ and its
// path printed. Skipped, saying why, only where no container engine answers (.ci/run starts one).
// Long runs: `npm run fuzz -- --time 600` (docs/SECURITY.md).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FUZZ_TARGETS } from '../fuzz/fuzz-target.js';
import { buildFuzzImage, runFuzzTarget } from '../fuzz/lane.js';
import { missingEngine } from './engine.js';

const noEngine = await missingEngine();
if (noEngine) console.warn(`fuzzing lane skipped: no container engine (${noEngine})`);

/** Per target: five targets and the build stay within about three minutes on two busy cores. */
const SECONDS = 15;
const OUT_DIR = 'test-results/fuzz';

describe.skipIf(noEngine !== undefined)(
  `the fuzzing lane${noEngine ? ` (skipped: no container engine: ${noEngine})` : ''}`,
  () => {
    beforeAll(async () => {
      await buildFuzzImage();
    }, 900_000);
    afterAll(() => {
      console.log(`fuzzing lane: inputs and findings under ${OUT_DIR}/`);
    });

    it.each(FUZZ_TARGETS)(
      `fuzzing %s for ${SECONDS} s from the committed corpus finds no crash, hang or forged acceptance`,
      async (target) => {
        const run = await runFuzzTarget(target, { seconds: SECONDS, outDir: OUT_DIR });
        const report = `${run.findings.map((file) => `finding: ${file}\n`).join('')}${run.log
          .split('\n')
          .slice(-40)
          .join('\n')}`;
        expect(run.findings, report).toEqual([]);
        expect(run.exitCode, report).toBe(0);
        // It fuzzed: the committed seeds loaded and inputs beyond them were run.
        expect(run.seeds, report).toBeGreaterThan(10);
        expect(run.executions, report).toBeGreaterThan(run.seeds);
      },
      (SECONDS + 150) * 1000,
    );
  },
);

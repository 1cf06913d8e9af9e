// `npm run oracles -- --cases 1000000 [--seed N]`: the differential run of differential.ts at any
// size, with a progress line every 10,000 cases and a summary; exit 1 on any disagreement.
import { parseArgs } from 'node:util';
import { KNOWN_DIFFERENCES } from './known-differences.js';
import { ORACLES, runDifferential, type Summary } from './differential.js';

const { values } = parseArgs({
  options: { cases: { type: 'string', default: '100000' }, seed: { type: 'string' } },
});
const cases = Number(values.cases);
const seed = values.seed === undefined ? Date.now() % 2 ** 31 : Number(values.seed);
if (!Number.isInteger(cases) || cases < 1 || !Number.isInteger(seed))
  throw new TypeError('--cases and --seed take whole numbers');

const started = performance.now();
console.log(`oracles: ${cases} generated cases, seed ${seed}`);
const summary = await runDifferential({
  cases,
  seed,
  onProgress: (done, found) =>
    console.log(
      `  ${done} cases, ${found} disagreements, ${Math.round(done / ((performance.now() - started) / 1000))} cases/s`,
    ),
});
print(summary, (performance.now() - started) / 1000);
process.exitCode = summary.disagreementCount === 0 ? 0 : 1;

function print(s: Summary, seconds: number): void {
  console.log(
    `\n${s.cases} cases in ${seconds.toFixed(0)} s (seed ${s.seed}): the gate allowed ${s.allowed}, ${s.dpopCases} came with a DPoP proof`,
  );
  for (const oracle of ORACLES) {
    const known = Object.values(s.known[oracle]).reduce((a, b) => a + b, 0);
    const disagreements = s.disagreements.filter((d) => d.oracle === oracle).length;
    console.log(
      `\n${oracle}: ${s.agreed[oracle]} agreed, ${known} known differences, ${disagreements} disagreements`,
    );
    for (const { name, oracles } of KNOWN_DIFFERENCES)
      if (oracles.includes(oracle))
        console.log(`  ${String(s.known[oracle][name] ?? 0).padStart(8)}  ${name}`);
  }
  for (const d of s.disagreements.slice(0, 10))
    console.log(
      `\nDISAGREEMENT with ${d.oracle}: gate ${d.gate ? 'allowed' : 'refused'}, oracle ${d.oracleAllowed ? 'allowed' : 'refused'}; ${d.mutations.join(' ') || 'a valid request'}\n${JSON.stringify(d.spec)}`,
    );
}

// `npm run chaos [-- --quick] [--soak-minutes N] [--only NAME,…]`: faults under load against the
// real stack, each bounded in time, then a verdict table with the measured figures and a scan of
// every response and log line for leaks. Exits non-zero when any verdict fails.
import { parseArgs } from 'node:util';
import { startAttackStack } from '../attacks/attack-stack.js';
import {
  CHAOS_NGINX_ENV,
  chaosVerifierEnv,
  JWKS_COOLDOWN_S,
  sleep,
  type ChaosContext,
  type Timing,
  type Verdict,
} from './chaos-kit.js';
import { randomKidFlood, rotateSigningKey } from './key-faults.js';
import { floodTokenCache, soak } from './pressure.js';
import { killAndRestartVerifier, reloadNginx, stopIdp } from './process-faults.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    'soak-minutes': { type: 'string', default: '10' },
    only: { type: 'string' },
  },
});
const soakMinutes = Number(values['soak-minutes']);
if (!Number.isFinite(soakMinutes) || soakMinutes <= 0) {
  console.error('--soak-minutes must be a positive number');
  process.exit(2);
}

const timing: Timing = values.quick
  ? {
      settle: 2,
      verifierGap: 1.5,
      idpOutage: 8,
      kidFlood: 6,
      floodFactor: 1.5,
      soakSeconds: 30,
      concurrency: 8,
    }
  : {
      settle: 5,
      verifierGap: 3,
      idpOutage: 60,
      kidFlood: 20,
      floodFactor: 3,
      soakSeconds: soakMinutes * 60,
      concurrency: 16,
    };

// Order matters only for the key set: the IdP restart makes new keys, so it runs late; the
// cooldown pause between scenarios gives each one a clear unknown-kid budget.
const SCENARIOS: ReadonlyArray<[string, (ctx: ChaosContext) => Promise<Verdict>]> = [
  ['rotate', rotateSigningKey],
  ['reload', reloadNginx],
  ['kill', killAndRestartVerifier],
  ['cache', floodTokenCache],
  ['kid', randomKidFlood],
  ['idp', stopIdp],
  ['soak', soak],
];
const only = values.only?.split(',');
const chosen = SCENARIOS.filter(([name]) => !only || only.includes(name));

const log = (line: string) => console.error(`[chaos] ${line}`);
log(`starting the stack (${values.quick ? 'quick' : 'full'} mode)`);
const gate = await startAttackStack({
  env: { verifier: chaosVerifierEnv(1000), nginx: CHAOS_NGINX_ENV },
  log,
});
const ctx: ChaosContext = { gate, timing, cacheMaxEntries: 1000, log };
const verdicts: Verdict[] = [];
try {
  for (const [name, run] of chosen) {
    log(`scenario ${name}`);
    const started = Date.now();
    try {
      const verdict = await run(ctx);
      verdicts.push({
        ...verdict,
        figures: [...verdict.figures, `took ${((Date.now() - started) / 1000).toFixed(1)} s`],
      });
    } catch (error) {
      verdicts.push({
        scenario: name,
        pass: false,
        figures: [`aborted: ${(error as Error).message}`],
      });
    }
    await sleep(JWKS_COOLDOWN_S * 1000);
  }
  const leaks = gate.watch.scan(gate.readLogs());
  verdicts.push({
    scenario: 'never leaked',
    pass: leaks.length === 0,
    figures: [
      `${gate.watch.responseCount} distinct refusal bodies and ${gate.watch.tokenCount} token needles scanned against every log line`,
      ...leaks.slice(0, 5).map((leak) => `${leak.kind} at ${leak.where}: ${leak.detail}`),
    ],
  });
} finally {
  await gate.stop();
}

printTable(verdicts);
process.exit(verdicts.every((v) => v.pass) ? 0 : 1);

function printTable(rows: readonly Verdict[]): void {
  const width = Math.max(...rows.map((r) => r.scenario.length), 8);
  const line = `+-${'-'.repeat(width)}-+------+${'-'.repeat(80)}`;
  console.log(line);
  console.log(`| ${'scenario'.padEnd(width)} | pass | figures`);
  console.log(line);
  for (const row of rows) {
    row.figures.forEach((figure, i) => {
      const name = i === 0 ? row.scenario : '';
      const verdict = i === 0 ? (row.pass ? ' ok ' : 'FAIL') : '    ';
      console.log(`| ${name.padEnd(width)} | ${verdict} | ${figure}`);
    });
    console.log(line);
  }
  const failed = rows.filter((r) => !r.pass).length;
  console.log(`${rows.length - failed} passed, ${failed} failed`);
}

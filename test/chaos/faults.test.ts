// The fault scenarios of `npm run chaos`, shortened to seconds so they run in `npm test` against
// the real stack: same code, smaller timings and bounds. The soak stays in `npm run chaos` only.
// Order matters for the unknown-kid cooldown: a restarted verifier starts with it clear, and the
// random-kid flood waits for it before it starts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAttackStack, type AttackStack } from '../attacks/attack-stack.js';
import {
  CHAOS_NGINX_ENV,
  chaosVerifierEnv,
  type ChaosContext,
  type Timing,
  type Verdict,
} from './chaos-kit.js';
import { randomKidFlood, rotateSigningKey } from './key-faults.js';
import { floodTokenCache } from './pressure.js';
import { killAndRestartVerifier, reloadNginx, stopIdp } from './process-faults.js';

const FAST: Timing = {
  settle: 1,
  verifierGap: 1,
  idpOutage: 3,
  kidFlood: 3,
  floodFactor: 1.5,
  soakSeconds: 0,
  concurrency: 4,
};
const CACHE_ENTRIES = 200;

let gate: AttackStack;
let ctx: ChaosContext;

beforeAll(async () => {
  gate = await startAttackStack({
    env: { verifier: chaosVerifierEnv(CACHE_ENTRIES), nginx: CHAOS_NGINX_ENV },
  });
  ctx = { gate, timing: FAST, cacheMaxEntries: CACHE_ENTRIES, log: () => {} };
}, 120_000);

afterAll(async () => {
  await gate?.stop();
});

/** Runs one scenario and fails with its figures, so a red test says what was measured. */
async function expectPass(run: (ctx: ChaosContext) => Promise<Verdict>): Promise<void> {
  const verdict = await run(ctx);
  expect(verdict.pass, `${verdict.scenario}: ${verdict.figures.join('; ')}`).toBe(true);
}

describe('faults under load (fast variants)', () => {
  it(
    'passes a rotated key at once and refuses a retired one within a refresh',
    () => expectPass(rotateSigningKey),
    90_000,
  );
  it(
    'serves every valid request through three NGINX reloads',
    () => expectPass(reloadNginx),
    60_000,
  );
  it(
    'fails closed with 503 while the verifier is dead and recovers once it is back',
    () => expectPass(killAndRestartVerifier),
    60_000,
  );
  it(
    'keeps the decision cache within its bounds under a flood of distinct tokens',
    () => expectPass(floodTokenCache),
    90_000,
  );
  it('keeps passing valid tokens while the IdP is stopped', () => expectPass(stopIdp), 90_000);
  it(
    'fetches the key set at most once per cooldown under a random-kid flood',
    () => expectPass(randomKidFlood),
    60_000,
  );

  it('leaked nothing: no secret in a refusal, no token in any log line', () => {
    expect(gate.watch.responseCount).toBeGreaterThan(0);
    expect(gate.watch.scan(gate.readLogs())).toEqual([]);
  });
});

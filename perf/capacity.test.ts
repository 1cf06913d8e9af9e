// The capacity search without load: how a step is judged, which step is the capacity, what the
// report says and how the options select the search.
import { describe, expect, it } from 'vitest';
import {
  capacitySpread,
  judgeTrials,
  needsAnotherTrial,
  CAPACITY_STEP_SECONDS,
  capacityOf,
  capacitySeries,
  formatCapacity,
  judgeStep,
  LEAST_CAPACITY_USERS,
  nextStepUsers,
  offeredRps,
  shouldContinue,
  type CapacityStep,
} from './capacity.js';
import { renderChart } from './chart.js';
import { parseStressOptions } from './stress-options.js';
import type { WrkStudyResult } from './wrk-study.js';

function wrk(rps: number, p99: number, failures = 0): WrkStudyResult {
  return {
    requests: rps * 30,
    helloRequests: rps * 10,
    secretRequests: rps * 20,
    durationSeconds: 30,
    rps,
    socketErrors: failures,
    statusErrors: 0,
    failures,
    latencyMs: { p50: p99 / 4, p90: p99 / 2, p95: p99 / 1.5, p99, max: p99 * 2, mean: p99 / 3 },
  };
}
const idleWrk = { cpuSeconds: 5, wallSeconds: 25, waitSeconds: 0 };
const busyWrk = { cpuSeconds: 24, wallSeconds: 25, waitSeconds: 0 };

describe('a capacity step', () => {
  it('offers one request per user per half second, the mean of the 0–1 s think time', () => {
    expect(offeredRps(2500)).toBe(5000);
    expect(offeredRps(100, 200)).toBe(1000);
  });

  it('holds the goal at exactly p99 100 ms with no failure, and breaks it just above', () => {
    expect(judgeStep(1000, wrk(1990, 100), idleWrk).heldGoal).toBe(true);
    expect(judgeStep(1000, wrk(1990, 100.1), idleWrk).heldGoal).toBe(false);
  });

  it('breaks the goal with a single failure however fast the rest was', () => {
    const step = judgeStep(1000, wrk(1990, 3, 1), idleWrk);
    expect(step.heldGoal).toBe(false);
    expect(shouldContinue(step)).toBe(false);
  });

  it('shows wrk’s own CPU and flags a step whose generator needed 90 % of its core', () => {
    expect(judgeStep(500, wrk(990, 5), idleWrk)).toMatchObject({
      generatorCpuShare: 0.2,
      generatorSaturated: false,
    });
    expect(judgeStep(500, wrk(990, 5), busyWrk).generatorSaturated).toBe(true);
    expect(judgeStep(500, wrk(990, 5), { cpuSeconds: 0, wallSeconds: 0 }).generatorSaturated).toBe(
      true,
    );
  });
});

describe('a step judged over trials', () => {
  const held = judgeStep(1000, wrk(1990, 40), idleWrk);
  const broken = judgeStep(1000, wrk(1990, 400), idleWrk);

  it('stops as soon as two of three trials agree, and runs the third only on a split', () => {
    expect(needsAnotherTrial([held], 3)).toBe(true);
    expect(needsAnotherTrial([held, held], 3)).toBe(false);
    expect(needsAnotherTrial([broken, broken], 3)).toBe(false);
    expect(needsAnotherTrial([held, broken], 3)).toBe(true);
    expect(needsAnotherTrial([held, broken, held], 3)).toBe(false);
    expect(needsAnotherTrial([broken], 1)).toBe(false);
  });

  it('holds when most trials held, showing a trial that agrees with the verdict', () => {
    const step = judgeTrials([held, broken, held]);
    expect(step).toMatchObject({ heldGoal: true, p99Ms: 40, trials: { run: 3, held: 2 } });
    expect(judgeTrials([broken, held, broken])).toMatchObject({ heldGoal: false, p99Ms: 400 });
  });

  it('one bad trial no longer moves the capacity of a search', () => {
    const search = (second: CapacityStep) => [
      judgeTrials([judgeStep(500, wrk(990, 8), idleWrk)]),
      judgeTrials([judgeStep(1000, wrk(1990, 30), idleWrk), second, held]),
      judgeTrials([judgeStep(1500, wrk(2900, 300), idleWrk)]),
    ];
    expect(capacityOf(search(held))?.users).toBe(1000);
    expect(capacityOf(search(broken))?.users).toBe(1000);
  });

  it('reports how far apart the capacities of several searches landed, in ladder steps', () => {
    const at = (users: number) => [judgeStep(users, wrk(users * 2, 20), idleWrk)];
    expect(capacitySpread([500, 1000, 1500], [at(1000), at(1000), at(1000)]).spreadSteps).toBe(0);
    expect(capacitySpread([500, 1000, 1500], [at(1000), at(1500), at(1000)])).toEqual({
      capacities: [1000, 1500, 1000],
      spreadSteps: 1,
    });
  });
});

describe('the capacity of a system', () => {
  const steps = [
    judgeStep(500, wrk(990, 8), idleWrk),
    judgeStep(1000, wrk(1980, 20), idleWrk),
    judgeStep(2000, wrk(3900, 60), busyWrk),
    judgeStep(2500, wrk(4100, 900, 12), idleWrk),
  ];

  it('is the highest step that held the goal with wrk unsaturated', () => {
    expect(capacityOf(steps)?.users).toBe(1000);
  });

  it('is none when no step held the goal', () => {
    expect(capacityOf(steps.slice(3))).toBeUndefined();
    expect(formatCapacity('study-node', steps.slice(3))).toContain(
      'study-node held the goal at no step',
    );
  });

  it('is reported with every step, wrk’s share, the saturated step flagged and the tight hint', () => {
    const text = formatCapacity('ours', steps);
    expect(text).toContain('| 1000 | 2000 | 1980 | 0 | 20.0 | 20 % | held |');
    expect(text).toContain('| 2000 | 4000 | 3900 | 0 | 60.0 | 96 % (saturated) | held |');
    expect(text).toContain('| 2500 | 5000 | 4100 | 12 | 900.0 | 20 % | broken |');
    const crowded = judgeStep(500, wrk(990, 5), {
      cpuSeconds: 2.5,
      wallSeconds: 25,
      waitSeconds: 22,
    });
    expect(formatCapacity('ours', [crowded])).toContain(
      '| 10 % + 88 % waiting (saturated) | held |',
    );
    expect(text).toContain('**2000 requests/s offered** (1000 users, 1980 served)');
    expect(text).toContain('--profile tight');
  });

  it('charts p99 and the served rate against the offered load', () => {
    const series = capacitySeries('ours', steps);
    expect(series.points[1]).toEqual({ t: 2000, rps: 1980, p99Ms: 20 });
    const svg = renderChart([series], 'capacity', 'req/s offered');
    expect(svg).toContain('5000 req/s offered');
    expect(svg).not.toMatch(/\d s<\/text>/);
  });
});

describe('where a step’s time went', () => {
  const throttling = (throttledPeriods: number) => ({
    periods: 300,
    throttledPeriods,
    throttledSeconds: throttledPeriods / 100,
  });
  const step = judgeStep(1000, wrk(2000, 140), idleWrk, {
    services: [
      {
        name: 'nginx',
        cpuSeconds: 4.8,
        waitSeconds: 12,
        wallSeconds: 30,
        throttling: throttling(150),
      },
      {
        name: 'verifier',
        cpuSeconds: 1.2,
        waitSeconds: 3,
        wallSeconds: 30,
        throttling: throttling(0),
      },
      { name: 'idp', cpuSeconds: 0 },
    ],
    serverLatency: [
      { path: '/hello', count: 20_000, p50Ms: 0, p99Ms: 1, maxMs: 3 },
      { path: '/secret', count: 40_000, p50Ms: 1, p99Ms: 85, maxMs: 120 },
    ],
  });

  it('is each service’s CPU per request served and how often its quota ran out', () => {
    expect(step.services).toEqual([
      { name: 'nginx', cpuUsPerRequest: 80, throttledShare: 0.5, waitShare: 0.4 },
      { name: 'verifier', cpuUsPerRequest: 20, throttledShare: 0, waitShare: 0.1 },
      { name: 'idp', cpuUsPerRequest: 0, throttledShare: undefined, waitShare: undefined },
    ]);
    expect(step.gateSecretP99Ms).toBe(85);
  });

  it('is in the step’s row, leaving out an idle support service', () => {
    expect(formatCapacity('ours', [step])).toContain(
      '| broken | nginx 80 (50 %) + verifier 20 (0 %); waited for a core: nginx 40 %, verifier 10 % | 85 ms |',
    );
    expect(formatCapacity('ours', [judgeStep(250, wrk(500, 5), idleWrk)])).toContain(
      '| held | — | — |',
    );
  });
});

describe('the steps of the search', () => {
  const plan = [250, 500, 1000];
  const held = (users: number) => judgeStep(users, wrk(users * 2, 10), idleWrk);
  const broken = (users: number) => judgeStep(users, wrk(users * 2, 500), idleWrk);

  it('climb the plan while steps hold and end at the first broken one', () => {
    expect(nextStepUsers(plan, [])).toBe(250);
    expect(nextStepUsers(plan, [held(250)])).toBe(500);
    expect(nextStepUsers(plan, [held(250), held(500), held(1000)])).toBeUndefined();
    expect(nextStepUsers(plan, [held(250), broken(500)])).toBeUndefined();
  });

  it('go down by halves when the first step already broke, until one holds', () => {
    expect(nextStepUsers(plan, [broken(250)])).toBe(125);
    expect(nextStepUsers(plan, [broken(250), broken(125)])).toBe(62);
    expect(nextStepUsers(plan, [broken(250), held(125)])).toBeUndefined();
    expect(capacityOf([broken(250), held(125)])?.users).toBe(125);
  });

  it(`stop at ${LEAST_CAPACITY_USERS} users, leaving a system that never held without a capacity`, () => {
    expect(nextStepUsers(plan, [broken(250), broken(125), broken(62), broken(31)])).toBeUndefined();
    expect(nextStepUsers([50, 100], [broken(50)])).toBe(25);
    expect(nextStepUsers([50, 100], [broken(50), broken(25)])).toBeUndefined();
  });
});

describe('npm run stress -- --find-capacity', () => {
  it('runs steps of 30 s by default and two short steps with --quick', () => {
    expect(parseStressOptions(['--find-capacity'])).toMatchObject({
      findCapacity: true,
      quick: false,
      durationSeconds: CAPACITY_STEP_SECONDS.full,
    });
    expect(parseStressOptions(['--find-capacity', '--quick'])).toMatchObject({
      quick: true,
      durationSeconds: CAPACITY_STEP_SECONDS.quick,
    });
    expect(parseStressOptions(['--find-capacity', '--duration', '45']).durationSeconds).toBe(45);
    expect(parseStressOptions([]).findCapacity).toBe(false);
  });
});

// The capacity search without load: how a step is judged, which step is the capacity, what the
// report says and how the options select the search.
import { describe, expect, it } from 'vitest';
import {
  capacityBracket,
  capacitySpread,
  judgeTrials,
  needsAnotherTrial,
  CAPACITY_STEP_SECONDS,
  capacityOf,
  capacitySeries,
  judgeStep,
  LEAST_CAPACITY_USERS,
  nextStepUsers,
  offeredRps,
  shouldContinue,
  type CapacityStep,
} from './capacity.js';
import { formatCapacity, formatSearches } from './capacity-report.js';
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

  it('breaks the goal when most requests were never answered, though none failed', () => {
    expect(judgeStep(1125, wrk(0, 0), idleWrk).heldGoal).toBe(false);
    expect(judgeStep(1000, wrk(1400, 20), idleWrk).heldGoal).toBe(false);
    expect(judgeStep(1000, wrk(1500, 20), idleWrk).heldGoal).toBe(true);
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

  it('reports how far apart the capacities of several searches landed, in fine steps', () => {
    const at = (users: number) => [judgeStep(users, wrk(users * 2, 20), idleWrk)];
    expect(capacitySpread(0.05, [at(3000), at(3000), at(3000)]).spreadSteps).toBe(0);
    expect(capacitySpread(0.05, [at(3000), at(3125), at(3000)])).toEqual({
      capacities: [3000, 3125, 3000],
      spreadSteps: 125 / 150,
    });
    expect(capacitySpread(0.05, [at(3000), at(3500)]).spreadSteps).toBeCloseTo(3.33, 2);
    expect(capacitySpread(0.05, [at(3000), []]).spreadSteps).toBe(Infinity);
  });

  it('never counts a trial whose wrk saturated as held, and says a step measured wrk', () => {
    const saturated = judgeStep(1000, wrk(1990, 40), busyWrk);
    expect(needsAnotherTrial([held, saturated], 3)).toBe(true);
    expect(needsAnotherTrial([held, saturated, saturated, held], 3)).toBe(false);
    expect(needsAnotherTrial([saturated, saturated, saturated, saturated], 3)).toBe(true);
    expect(needsAnotherTrial([saturated, held, saturated, saturated, saturated], 3)).toBe(false);
    expect(judgeTrials([saturated, held, saturated, saturated, saturated], 3)).toMatchObject({
      generatorSaturated: true,
      trials: { run: 5, held: 1 },
    });
    expect(judgeTrials([held, saturated, held])).toMatchObject({
      heldGoal: true,
      generatorSaturated: false,
      trials: { run: 3, held: 2 },
    });
    expect(judgeTrials([saturated, held, saturated])).toMatchObject({
      generatorSaturated: true,
      trials: { run: 3, held: 1 },
    });
    expect(judgeTrials([saturated, broken, broken])).toMatchObject({
      heldGoal: false,
      generatorSaturated: false,
      p99Ms: 400,
    });
  });
});

describe('three searches in a row', () => {
  const search = (name: string, users: number) => ({
    name,
    steps: [
      judgeStep(users, wrk(users * 2, 20), idleWrk),
      judgeStep(users + 100, wrk(users * 2, 300), idleWrk),
    ],
  });
  const runs = [
    [search('ours', 1500), search('study-njs', 1000)],
    [search('ours', 1550), search('study-njs', 1100)],
    [search('ours', 1500), search('study-njs', 1000)],
  ];

  it('give each system’s capacity per run and their spread in fine steps', () => {
    const text = formatSearches(['ours', 'study-njs'], runs, 0.05);
    expect(text).toContain('resolution (5 % of the lowest)');
    expect(text).toContain('| ours | 1500 (3000) | 1550 (3100) | 1500 (3000) | 0.7 steps |');
    expect(text).toContain('| study-njs | 1000 (2000) | 1100 (2200) | 1000 (2000) | 2.0 steps |');
  });

  it('give ours over each baseline run by run, missed when one run falls below the goal', () => {
    expect(formatSearches(['ours', 'study-njs'], runs, 0.05)).toContain(
      'ours ÷ study-njs, run by run: 1.50×, 1.41×, 1.50× (goal ≥ 1.5× in each: missed).',
    );
    expect(formatSearches(['ours', 'study-njs'], [runs[0]!, runs[2]!], 0.05)).toContain(
      '1.50×, 1.50× (goal ≥ 1.5× in each: met)',
    );
    const noCapacity = [[search('ours', 1500), { name: 'study-njs', steps: [] }]];
    expect(formatSearches(['ours', 'study-njs'], noCapacity, 0.05)).toContain(
      '| study-njs | none | — |',
    );
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
  const coarse = Infinity;

  it('climb the plan while steps hold and end at the first broken one', () => {
    expect(nextStepUsers(plan, [], coarse)).toBe(250);
    expect(nextStepUsers(plan, [held(250)], coarse)).toBe(500);
    expect(nextStepUsers(plan, [held(250), held(500), held(1000)], coarse)).toBeUndefined();
    expect(nextStepUsers(plan, [held(250), broken(500)], coarse)).toBeUndefined();
  });

  it('go down by halves when the first step already broke, until one holds', () => {
    expect(nextStepUsers(plan, [broken(250)], coarse)).toBe(125);
    expect(nextStepUsers(plan, [broken(250), broken(125)], coarse)).toBe(62);
    expect(nextStepUsers(plan, [broken(250), held(125)], coarse)).toBeUndefined();
    expect(capacityOf([broken(250), held(125)])?.users).toBe(125);
  });

  it(`stop at ${LEAST_CAPACITY_USERS} users, leaving a system that never held without a capacity`, () => {
    expect(nextStepUsers(plan, [broken(250), broken(125), broken(62), broken(31)])).toBeUndefined();
    expect(nextStepUsers([50, 100], [broken(50)])).toBe(25);
    expect(nextStepUsers([50, 100], [broken(50), broken(25)])).toBeUndefined();
  });
});

describe('fine steps between the last step that held and the first that broke', () => {
  const plan = [2000, 2500, 3000, 4000, 5000];
  const held = (users: number) => judgeStep(users, wrk(users * 2, 10), idleWrk);
  const broken = (users: number) => judgeStep(users, wrk(users * 2, 500), idleWrk);
  const saturated = (users: number) => judgeStep(users, wrk(users * 2, 10), busyWrk);
  const climb = [held(2000), held(2500), held(3000)];

  it('bisect the bracket the coarse ladder ended on', () => {
    expect(nextStepUsers(plan, [...climb, broken(4000)], 0.05)).toBe(3500);
    expect(nextStepUsers(plan, [...climb, broken(4000), held(3500)], 0.05)).toBe(3750);
    expect(nextStepUsers(plan, [...climb, broken(4000), broken(3500)], 0.05)).toBe(3250);
    expect(nextStepUsers(plan, [...climb, broken(4000), broken(3500), held(3250)], 0.05)).toBe(
      3375,
    );
  });

  it('stop once the bracket is at most the resolution of the load that held', () => {
    const search = [...climb, broken(4000), broken(3500), broken(3250), held(3125)];
    expect(nextStepUsers(plan, search.slice(0, -1), 0.05)).toBe(3125);
    expect(nextStepUsers(plan, search, 0.05)).toBeUndefined();
    expect(nextStepUsers(plan, search, 0.03)).toBe(3188);
    expect(nextStepUsers(plan, search.slice(0, -1), 0.1)).toBeUndefined();
    expect(capacityOf(search)?.users).toBe(3125);
  });

  it('go on in the bracket whatever order the fine steps held or broke in', () => {
    const wobbly = [...climb, broken(4000), held(3500), broken(3750), held(3625)];
    expect(nextStepUsers(plan, wobbly, 0.03)).toBe(3688);
    expect(capacityOf(wobbly)?.users).toBe(3625);
  });

  it('refine a baseline that only held below the first step, between its halves', () => {
    const halves = [broken(2000), broken(1000), held(500)];
    expect(nextStepUsers(plan, halves, 0.05)).toBe(750);
    expect(nextStepUsers(plan, [...halves, held(750)], 0.05)).toBe(875);
    const table = formatCapacity('study-njs', [...halves, held(750), broken(875)], { plan });
    expect(table).toContain('| 500 (half) |');
    expect(table).toContain('| 750 (fine) |');
  });

  it('end the climb at a step where wrk saturated, and bisect below it, never counting it', () => {
    expect(shouldContinue(saturated(4000))).toBe(false);
    const search = [...climb, saturated(4000)];
    expect(capacityOf(search)?.users).toBe(3000);
    expect(nextStepUsers(plan, search, 0.05)).toBe(3500);
    expect(capacityBracket([...search, held(3500)])).toMatchObject({
      held: { users: 3500 },
      broke: { users: 4000, generatorSaturated: true },
    });
  });

  it('report the bracket and its resolution, or that wrk ended the search', () => {
    const resolved = formatCapacity('ours', [...climb, broken(4000), held(3500), broken(3750)], {
      plan,
      resolution: 0.1,
    });
    expect(resolved).toContain('| 3500 (fine) | 7000 |');
    expect(resolved).toContain('| 4000 | 8000 |');
    expect(resolved.indexOf('| 3750 (fine)')).toBeLessThan(resolved.indexOf('| 4000 | 8000 |'));
    expect(resolved).toContain('**7000 requests/s offered** (3500 users, 7000 served)');
    expect(resolved).toContain(
      'it broke at 7500 (p99 500.0 ms, 0 failures): the capacity lies between 3500 and 3750 users (7.1 % apart; resolution 10 %)',
    );
    const stopped = formatCapacity('ours', [...climb, saturated(4000), held(3500)], {
      plan,
      resolution: 0.1,
    });
    expect(stopped).toContain(
      'The search stopped at a step where wrk saturated its core (96 % used)',
    );
    expect(stopped).toContain('the capacity is at least this and unresolved above it');
    const crowded = judgeStep(4000, wrk(8000, 30), {
      cpuSeconds: 2,
      wallSeconds: 25,
      waitSeconds: 22,
    });
    expect(formatCapacity('ours', [...climb, crowded], { plan })).toContain(
      'wrk waited for its core (other work on the machine: 88 % waiting, 8 % used)',
    );
    expect(formatCapacity('ours', [...climb], { plan })).toContain(
      'it held every step of the plan, so it may be higher',
    );
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

  it('refines to 5 % by default, to --resolution per cent when given, and not with --quick', () => {
    expect(parseStressOptions(['--find-capacity']).resolution).toBe(0.05);
    expect(parseStressOptions(['--find-capacity', '--resolution', '10']).resolution).toBe(0.1);
    expect(parseStressOptions(['--find-capacity', '--quick']).resolution).toBe(Infinity);
    expect(() => parseStressOptions(['--find-capacity', '--resolution', '0'])).toThrow(
      '"--resolution" must be a percentage from 1 to 50',
    );
    expect(() => parseStressOptions(['--resolution', '5'])).toThrow(
      '"--resolution" needs --find-capacity',
    );
  });
});

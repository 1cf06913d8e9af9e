// The capacity search without load: how a step is judged, which step is the capacity, what the
// report says and how the options select the search.
import { describe, expect, it } from 'vitest';
import {
  CAPACITY_STEP_SECONDS,
  capacityOf,
  capacitySeries,
  formatCapacity,
  judgeStep,
  offeredRps,
  shouldContinue,
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

// `npm run stress -- --find-capacity`: the study's closed scenario under wrk at rising numbers of
// users, one step after another on one system, until a step breaks the latency goal (any failure,
// or p99 above 100 ms). A system's capacity is the highest load of a step that held the goal while
// wrk itself kept up; a step whose generator saturated its core says more about wrk than about the
// gate and is flagged, never counted. Which step comes next, and what the steps conclude, is in
// capacity-search.ts; the report's text in capacity-report.ts; this module judges one step.
import type { Series } from './chart.js';
import { isSaturated } from './generators.js';
import type { CpuThrottling } from './limits.js';
import type { LoadGeneratorUsage } from './generators.js';
import type { ServerLatency } from './server-latency.js';
import type { WrkStudyResult } from './wrk-study.js';

export {
  capacityBracket,
  capacityOf,
  capacitySpread,
  CAPACITY_RESOLUTION,
  CAPACITY_STEP_TRIALS,
  CAPACITY_STEPS,
  countsAsHeld,
  judgeTrials,
  LEAST_CAPACITY_USERS,
  needsAnotherTrial,
  nextStepUsers,
  QUICK_CAPACITY_STEPS,
  shouldContinue,
} from './capacity-search.js';

export const CAPACITY_GOAL = Object.freeze({ p99Ms: 100, failures: 0 });
/** Ours' capacity over each baseline's, in every search (issue 40: study-njs; the study: study-node). */
export const CAPACITY_RATIO_GOALS: Readonly<Partial<Record<string, number>>> = Object.freeze({
  'study-njs': 1.5,
  'study-node': 10,
});
export const CAPACITY_STEP_SECONDS = Object.freeze({ full: 30, quick: 8 });
/**
 * wrk times only the requests that were answered: a gate that stalls leaves its requests in flight
 * (wrk's timeout is 60 s), untimed, and can show 0 failures and a low p99 over a few answers. At
 * p99 ≤ 100 ms the closed model answers at least 0.5 s ÷ (0.5 + 0.1) s ≈ 83 % of the offered load
 * (less each connection's first think time), so a step that answered less than this did not hold.
 */
export const MIN_SERVED_SHARE = 0.75;
/** The study's think time, uniform 0–1 s: a user asks once per 0.5 s on average. */
export const MAX_THINK_MS = 1000;

/** One service of the system during a step: where the gate's time went. */
export interface StepService {
  readonly name: string;
  /** CPU time of the service per request wrk completed. */
  readonly cpuUsPerRequest: number;
  /** Share of the CFS periods that ended throttled (undefined when not under a quota). */
  readonly throttledShare: number | undefined;
  /**
   * Share of the step its threads waited runnable for a core (summed over processes and threads,
   * so it can pass 100 %): high with little CPU used means other work held the core.
   */
  readonly waitShare: number | undefined;
}

/** What the runner measured on the system's side while a step ran. */
export interface StepMeasurements {
  readonly services: readonly {
    readonly name: string;
    readonly cpuSeconds: number;
    readonly waitSeconds?: number | undefined;
    readonly wallSeconds?: number | undefined;
    readonly throttling?: CpuThrottling | undefined;
  }[];
  /** The gate's own latency per path from its access log (ours only). */
  readonly serverLatency?: readonly ServerLatency[] | undefined;
}

export interface CapacityStep {
  readonly users: number;
  /** What the users ask for in the closed model: one request per mean think time each. */
  readonly offeredRps: number;
  readonly servedRps: number;
  readonly requests: number;
  readonly failures: number;
  readonly p99Ms: number;
  /** wrk's CPU over wall time, and its run-queue wait (undefined when not sampled). */
  readonly generatorCpuShare: number | undefined;
  readonly generatorWaitShare: number | undefined;
  /** wrk needed ≥ 90 % of its core: the step measured the generator, not the gate. */
  readonly generatorSaturated: boolean;
  /** 0 failures, p99 ≤ 100 ms, and at least MIN_SERVED_SHARE of the offered load answered. */
  readonly heldGoal: boolean;
  /** Per service, CPU per request and throttling; empty when not measured. */
  readonly services: readonly StepService[];
  /** `/secret`'s p99 inside the gate (its access log), when it writes one. */
  readonly gateSecretP99Ms: number | undefined;
  /** Trials run at this step and how many held the goal (1 and 0/1 for a single trial). */
  readonly trials?: { readonly run: number; readonly held: number } | undefined;
}

/** Requests per second `users` offer with think time uniform in [0, maxThinkMs]. */
export function offeredRps(users: number, maxThinkMs = MAX_THINK_MS): number {
  return users / (maxThinkMs / 2 / 1000);
}

/**
 * One step's figures from wrk's totals and its own CPU over the measured window, and (when given)
 * the system's side: each service's CPU per request and throttling, the gate's own p99.
 */
export function judgeStep(
  users: number,
  result: WrkStudyResult,
  generator: LoadGeneratorUsage,
  measured: StepMeasurements = { services: [] },
  maxThinkMs = MAX_THINK_MS,
): CapacityStep {
  const wall = generator.wallSeconds;
  const cpuShare = wall > 0 ? generator.cpuSeconds / wall : undefined;
  const waitShare =
    wall > 0 && generator.waitSeconds !== undefined ? generator.waitSeconds / wall : undefined;
  return {
    users,
    offeredRps: offeredRps(users, maxThinkMs),
    servedRps: result.rps,
    requests: result.requests,
    failures: result.failures,
    p99Ms: result.latencyMs.p99,
    generatorCpuShare: cpuShare,
    generatorWaitShare: waitShare,
    generatorSaturated: isSaturated({ cpuShare, waitShare }),
    heldGoal:
      result.failures <= CAPACITY_GOAL.failures &&
      result.latencyMs.p99 <= CAPACITY_GOAL.p99Ms &&
      result.rps >= MIN_SERVED_SHARE * offeredRps(users, maxThinkMs),
    services: measured.services.map((service) => ({
      name: service.name,
      cpuUsPerRequest: result.requests > 0 ? (service.cpuSeconds * 1e6) / result.requests : 0,
      throttledShare:
        service.throttling && service.throttling.periods > 0
          ? service.throttling.throttledPeriods / service.throttling.periods
          : undefined,
      waitShare:
        service.waitSeconds !== undefined && service.wallSeconds
          ? service.waitSeconds / service.wallSeconds
          : undefined,
    })),
    gateSecretP99Ms: measured.serverLatency?.find((row) => row.path === '/secret')?.p99Ms,
  };
}

/** Steps in order of load: fine steps run after the step that broke, the table reads upwards. */
function byUsers(steps: readonly CapacityStep[]): CapacityStep[] {
  return [...steps].sort((a, b) => a.users - b.users);
}

/** Points for perf/chart.ts: x is the offered load, y the served rate and the p99. */
export function capacitySeries(name: string, steps: readonly CapacityStep[]): Series {
  return {
    name,
    points: byUsers(steps).map((step) => ({
      t: step.offeredRps,
      rps: step.servedRps,
      p99Ms: step.p99Ms,
    })),
  };
}

// `npm run stress -- --find-capacity`: the study's closed scenario under wrk at rising numbers of
// users, one step after another on one system, until a step breaks the latency goal (any failure,
// or p99 above 100 ms). A system's capacity is the highest load of a step that held the goal while
// wrk itself kept up; a step whose generator saturated its core says more about wrk than about the
// gate and is flagged, never counted. Which step comes next, and what the steps conclude, is in
// capacity-search.ts; this module judges one step and writes the report.
import type { Series } from './chart.js';
import { capacityBracket, CAPACITY_RESOLUTION } from './capacity-search.js';
import { isSaturated, SATURATED_LOAD_GENERATOR } from './generators.js';
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
export const CAPACITY_STEP_SECONDS = Object.freeze({ full: 30, quick: 8 });
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
  /** 0 failures and p99 ≤ 100 ms. */
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
      result.failures <= CAPACITY_GOAL.failures && result.latencyMs.p99 <= CAPACITY_GOAL.p99Ms,
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

const percent = (share: number | undefined) =>
  share === undefined ? '—' : `${(share * 100).toFixed(0)} %`;

/**
 * wrk's CPU share, and its wait for a runnable core when it had one: on a shared machine wrk can
 * be saturated by other work on its core while using little CPU itself.
 */
function generatorShare(step: CapacityStep): string {
  const wait = step.generatorWaitShare ?? 0;
  const waited = wait >= 0.01 ? ` + ${percent(wait)} waiting` : '';
  return `${percent(step.generatorCpuShare)}${waited}${step.generatorSaturated ? ' (saturated)' : ''}`;
}

/**
 * `nginx 80 (12 %) + verifier 30 (0 %)`: CPU µs per request, and the throttled share where
 * limited; then how long the limited services waited for a core (`waited nginx 40 %`).
 */
function serviceCosts(step: CapacityStep): string {
  if (step.services.length === 0) return '—';
  const costs = step.services
    .filter((service) => service.cpuUsPerRequest >= 0.5 || service.throttledShare !== undefined)
    .map(
      (service) =>
        `${service.name} ${service.cpuUsPerRequest.toFixed(0)}${service.throttledShare === undefined ? '' : ` (${percent(service.throttledShare)})`}`,
    )
    .join(' + ');
  const waits = step.services
    .filter((service) => service.throttledShare !== undefined && service.waitShare !== undefined)
    .map((service) => `${service.name} ${percent(service.waitShare)}`);
  return waits.length === 0 ? costs : `${costs}; waited for a core: ${waits.join(', ')}`;
}

/** Why wrk could not keep up: its own work, or other work holding its core. */
function saturationCause(step: CapacityStep): string {
  const cpu = step.generatorCpuShare ?? 0;
  const wait = step.generatorWaitShare ?? 0;
  return wait > cpu
    ? `waited for its core (other work on the machine: ${percent(wait)} waiting, ${percent(cpu)} used)`
    : `saturated its core (${percent(cpu)} used)`;
}

/**
 * The search's conclusion in one or two sentences: the capacity, the first load above it that did
 * not hold (and how wide that bracket is against the resolution asked for), or, when the step
 * above saturated wrk, that the search could not look higher and why.
 */
function conclusion(name: string, steps: readonly CapacityStep[], resolution: number): string {
  const { held, broke } = capacityBracket(steps);
  if (!held)
    return `${name} held the goal at no step with wrk below ${SATURATED_LOAD_GENERATOR * 100} % of its core.`;
  const capacity = `Capacity of ${name} at p99 ≤ ${CAPACITY_GOAL.p99Ms} ms and 0 failures: **${held.offeredRps.toFixed(0)} requests/s offered** (${held.users} users, ${held.servedRps.toFixed(0)} served)`;
  if (!broke) return `${capacity}; it held every step of the plan, so it may be higher.`;
  const width = (broke.users - held.users) / held.users;
  const bracket = `between ${held.users} and ${broke.users} users (${(width * 100).toFixed(1)} % apart; resolution ${(resolution * 100).toFixed(0)} %)`;
  if (broke.generatorSaturated)
    return `${capacity}. The search stopped at a step where wrk ${saturationCause(broke)}, ${bracket}: above ${held.users} users it measured wrk, not the gate, so the capacity is at least this and unresolved above it.`;
  return `${capacity}; it broke at ${broke.offeredRps.toFixed(0)} (p99 ${broke.p99Ms.toFixed(1)} ms, ${broke.failures} failures): the capacity lies ${bracket}.`;
}

/**
 * One system's steps as a Markdown table in order of load (steps between the coarse ladder's
 * marked `fine`), then its capacity and the bracket the search ended on.
 */
export function formatCapacity(
  name: string,
  steps: readonly CapacityStep[],
  options: { readonly plan?: readonly number[]; readonly resolution?: number } = {},
): string {
  const resolution = options.resolution ?? CAPACITY_RESOLUTION;
  const fine = (step: CapacityStep) => {
    const plan = options.plan;
    if (plan === undefined || plan.includes(step.users)) return '';
    // The halves below the first step (250 → 125 → 62 …) are the coarse ladder going down.
    for (let half = Math.floor(plan[0]! / 2); half >= 1; half = Math.floor(half / 2))
      if (half === step.users) return ' (half)';
    return ' (fine)';
  };
  const lines = [
    `### ${name}`,
    '',
    '| users | offered req/s | served req/s | failures | p99 ms | wrk CPU | goal (trials held) | CPU µs per request (throttled periods); runnable, waiting for a core | `/secret` p99 inside the gate |',
    '| ----: | ------------: | -----------: | -------: | -----: | ------: | ---- | ------------------------------------------------------------------- | ----------------------------: |',
    ...byUsers(steps).map(
      (step) =>
        `| ${step.users}${fine(step)} | ${step.offeredRps.toFixed(0)} | ${step.servedRps.toFixed(0)} | ${step.failures} | ${step.p99Ms.toFixed(1)} | ${generatorShare(step)} | ${step.heldGoal ? 'held' : 'broken'}${step.trials && step.trials.run > 1 ? ` (${step.trials.held}/${step.trials.run})` : ''} | ${serviceCosts(step)} | ${step.gateSecretP99Ms === undefined ? '—' : `${step.gateSecretP99Ms} ms`} |`,
    ),
    '',
    conclusion(name, steps, resolution),
  ];
  const saturated = steps.filter((step) => step.generatorSaturated);
  if (saturated.length > 0) {
    const ownCore = saturated.some(
      (step) => (step.generatorCpuShare ?? 0) >= (step.generatorWaitShare ?? 0),
    );
    lines.push(
      `Steps marked saturated measured wrk, not the gate, and never count as held${ownCore ? ': where wrk used its whole core, rerun with `--profile tight` so the gate stays the bottleneck' : ': wrk was waiting for its core, so other work on the machine disturbed the run'}.`,
    );
  }
  return lines.join('\n');
}

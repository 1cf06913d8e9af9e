// `npm run stress -- --find-capacity`: the study's closed scenario under wrk at rising numbers of
// users, one step after another on one system, until a step breaks the latency goal (any failure,
// or p99 above 100 ms). A system's capacity is the highest load of a step that held the goal while
// wrk itself kept up; a step whose generator saturated its core says more about wrk than about the
// gate and is flagged, never counted.
import type { Series } from './chart.js';
import { isSaturated, SATURATED_LOAD_GENERATOR } from './generators.js';
import type { CpuThrottling } from './limits.js';
import type { LoadGeneratorUsage } from './generators.js';
import type { ServerLatency } from './server-latency.js';
import type { WrkStudyResult } from './wrk-study.js';

export const CAPACITY_GOAL = Object.freeze({ p99Ms: 100, failures: 0 });
/** Users per step: the study's 2,500 in the middle, doubling past it until a step fails. */
export const CAPACITY_STEPS: readonly number[] = Object.freeze([
  250, 500, 1000, 1500, 2000, 2500, 3000, 4000, 5000, 6500, 8000,
]);
/**
 * Below the first step: a system that breaks the goal at the first step is tried at half its users,
 * and half again, down to this many, so even a slow baseline gets a capacity to compare with.
 */
export const LEAST_CAPACITY_USERS = 25;
/** `--quick`: two small steps, to keep the harness alive in CI (not to quote). */
export const QUICK_CAPACITY_STEPS: readonly number[] = Object.freeze([50, 100]);
export const CAPACITY_STEP_SECONDS = Object.freeze({ full: 30, quick: 8 });
/**
 * Trials per step: a full search judges each step by the majority of up to three trials (two that
 * agree decide it), so one burst of load from elsewhere on a shared machine neither ends a search
 * early nor lifts it a step; `--quick` runs one.
 */
export const CAPACITY_STEP_TRIALS = Object.freeze({ full: 3, quick: 1 });
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

/** True while the trials so far leave the majority of `planned` undecided. */
export function needsAnotherTrial(trials: readonly CapacityStep[], planned: number): boolean {
  const majority = Math.floor(planned / 2) + 1;
  const held = trials.filter((trial) => trial.heldGoal).length;
  return held < majority && trials.length - held < majority && trials.length < planned;
}

/**
 * One step from its trials: held when most trials held; the figures are those of the median trial
 * by p99 among the trials that agree with the verdict, so the table shows a run that happened.
 */
export function judgeTrials(trials: readonly CapacityStep[]): CapacityStep {
  const held = trials.filter((trial) => trial.heldGoal).length;
  const heldGoal = held * 2 > trials.length;
  const agreeing = trials
    .filter((trial) => trial.heldGoal === heldGoal)
    .sort((a, b) => a.p99Ms - b.p99Ms);
  const median = agreeing[Math.floor((agreeing.length - 1) / 2)]!;
  return { ...median, heldGoal, trials: { run: trials.length, held } };
}

/** The highest step that held the goal with wrk unsaturated; undefined when none did. */
export function capacityOf(steps: readonly CapacityStep[]): CapacityStep | undefined {
  return steps
    .filter((step) => step.heldGoal && !step.generatorSaturated)
    .reduce<CapacityStep | undefined>(
      (best, step) => (best === undefined || step.offeredRps > best.offeredRps ? step : best),
      undefined,
    );
}

/** Points for perf/chart.ts: x is the offered load, y the served rate and the p99. */
export function capacitySeries(name: string, steps: readonly CapacityStep[]): Series {
  return {
    name,
    points: steps.map((step) => ({ t: step.offeredRps, rps: step.servedRps, p99Ms: step.p99Ms })),
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

/** One system's steps as a Markdown table, then its capacity in one sentence. */
export function formatCapacity(name: string, steps: readonly CapacityStep[]): string {
  const capacity = capacityOf(steps);
  const lines = [
    `### ${name}`,
    '',
    '| users | offered req/s | served req/s | failures | p99 ms | wrk CPU | goal (trials held) | CPU µs per request (throttled periods); runnable, waiting for a core | `/secret` p99 inside the gate |',
    '| ----: | ------------: | -----------: | -------: | -----: | ------: | ---- | ------------------------------------------------------------------- | ----------------------------: |',
    ...steps.map(
      (step) =>
        `| ${step.users} | ${step.offeredRps.toFixed(0)} | ${step.servedRps.toFixed(0)} | ${step.failures} | ${step.p99Ms.toFixed(1)} | ${generatorShare(step)} | ${step.heldGoal ? 'held' : 'broken'}${step.trials && step.trials.run > 1 ? ` (${step.trials.held}/${step.trials.run})` : ''} | ${serviceCosts(step)} | ${step.gateSecretP99Ms === undefined ? '—' : `${step.gateSecretP99Ms} ms`} |`,
    ),
    '',
    capacity
      ? `Capacity of ${name} at p99 ≤ ${CAPACITY_GOAL.p99Ms} ms and 0 failures: **${capacity.offeredRps.toFixed(0)} requests/s offered** (${capacity.users} users, ${capacity.servedRps.toFixed(0)} served).`
      : `${name} held the goal at no step with wrk below ${SATURATED_LOAD_GENERATOR * 100} % of its core.`,
  ];
  if (steps.some((step) => step.generatorSaturated)) {
    lines.push(
      `Steps marked saturated measured wrk, not the gate: rerun with \`--profile tight\` so the gate stays the bottleneck.`,
    );
  }
  return lines.join('\n');
}

/** Steps go on while they hold the goal; the first broken one ends the system's run. */
export function shouldContinue(step: CapacityStep): boolean {
  return step.heldGoal;
}

/**
 * The users of the next step, or undefined when the search is over. Up the plan while steps hold;
 * when the plan's first step already broke the goal, down by halves (to LEAST_CAPACITY_USERS)
 * until one holds, which is then the capacity.
 */
export function nextStepUsers(
  plan: readonly number[],
  steps: readonly CapacityStep[],
): number | undefined {
  const last = steps.at(-1);
  if (last === undefined) return plan[0];
  const descending = steps.length > 1 && last.users < steps[0]!.users;
  if (shouldContinue(last))
    return descending ? undefined : plan.find((users) => users > last.users);
  if (steps.some((step) => step.heldGoal)) return undefined;
  const half = Math.floor(last.users / 2);
  return half >= LEAST_CAPACITY_USERS && last.users <= plan[0]! ? half : undefined;
}

/** A system's capacity in each of several searches, and how far apart they landed in steps. */
export function capacitySpread(
  plan: readonly number[],
  runs: readonly (readonly CapacityStep[])[],
): { readonly capacities: readonly (number | undefined)[]; readonly spreadSteps: number } {
  const capacities = runs.map((steps) => capacityOf(steps)?.users);
  const ladder = [...new Set([...plan, ...capacities.filter((u) => u !== undefined)])].sort(
    (a, b) => a - b,
  );
  const positions = capacities.map((users) => (users === undefined ? -1 : ladder.indexOf(users)));
  return { capacities, spreadSteps: Math.max(...positions) - Math.min(...positions) };
}

// The capacity report's text: per system a table of its steps in order of load and the bracket
// its search ended on; with several searches, how far apart they landed and ours against each
// baseline, run by run, beside the goal.
import {
  capacityBracket,
  capacityOf,
  capacitySpread,
  CAPACITY_RESOLUTION,
} from './capacity-search.js';
import { CAPACITY_GOAL, CAPACITY_RATIO_GOALS, type CapacityStep } from './capacity.js';
import { SATURATED_LOAD_GENERATOR } from './generators.js';

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
 * ` (half)` for a step of the ladder going down below its first step (250 → 125 → 62 …), ` (fine)`
 * for a step bisecting a bracket, nothing for a step of the ladder.
 */
export function ladderMark(plan: readonly number[], users: number): string {
  if (plan.includes(users)) return '';
  for (let half = Math.floor(plan[0]! / 2); half >= 1; half = Math.floor(half / 2))
    if (half === users) return ' (half)';
  return ' (fine)';
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
  const mark = (step: CapacityStep) =>
    options.plan === undefined ? '' : ladderMark(options.plan, step.users);
  const lines = [
    `### ${name}`,
    '',
    '| users | offered req/s | served req/s | failures | p99 ms | wrk CPU | goal (trials held) | CPU µs per request (throttled periods); runnable, waiting for a core | `/secret` p99 inside the gate |',
    '| ----: | ------------: | -----------: | -------: | -----: | ------: | ---- | ------------------------------------------------------------------- | ----------------------------: |',
    ...[...steps]
      .sort((a, b) => a.users - b.users)
      .map(
        (step) =>
          `| ${step.users}${mark(step)} | ${step.offeredRps.toFixed(0)} | ${step.servedRps.toFixed(0)} | ${step.failures} | ${step.p99Ms.toFixed(1)} | ${generatorShare(step)} | ${step.heldGoal ? 'held' : 'broken'}${step.trials && step.trials.run > 1 ? ` (${step.trials.held}/${step.trials.run})` : ''} | ${serviceCosts(step)} | ${step.gateSecretP99Ms === undefined ? '—' : `${step.gateSecretP99Ms} ms`} |`,
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

/** One system's steps in one search. */
export interface SystemSearch {
  readonly name: string;
  readonly steps: readonly CapacityStep[];
}

/**
 * Several searches in a row: each system's capacity in every search, their spread in fine steps
 * (within 1, the searches agree as closely as the bisection can tell them apart), and ours over
 * each baseline run by run, met or missed against its goal.
 */
export function formatSearches(
  systems: readonly string[],
  runs: readonly (readonly SystemSearch[])[],
  resolution: number,
): string {
  const capacityIn = (run: readonly SystemSearch[], name: string) =>
    capacityOf(run.find((search) => search.name === name)?.steps ?? []);
  const lines = [
    `## ${runs.length} searches in a row`,
    '',
    `Spread: (highest − lowest capacity) ÷ the fine resolution (${(resolution * 100).toFixed(0)} % of the lowest); within 1 step, the searches agree as closely as the bisection can tell.`,
    '',
    `| system | ${runs.map((_, i) => `run ${i + 1}: users (req/s offered)`).join(' | ')} | spread |`,
    `| --- | ${runs.map(() => '---:').join(' | ')} | ---: |`,
  ];
  for (const name of systems) {
    const { spreadSteps } = capacitySpread(
      resolution,
      runs.map((run) => run.find((search) => search.name === name)?.steps ?? []),
    );
    const cells = runs.map((run) => {
      const step = capacityIn(run, name);
      return step ? `${step.users} (${step.offeredRps.toFixed(0)})` : 'none';
    });
    const spread = Number.isFinite(spreadSteps) ? `${spreadSteps.toFixed(1)} steps` : '—';
    lines.push(`| ${name} | ${cells.join(' | ')} | ${spread} |`);
  }
  if (!systems.includes('ours')) return lines.join('\n');
  for (const baseline of systems.filter((name) => name !== 'ours')) {
    const ratios = runs.map((run) => {
      const ours = capacityIn(run, 'ours');
      const theirs = capacityIn(run, baseline);
      return ours && theirs ? ours.offeredRps / theirs.offeredRps : undefined;
    });
    const goal = CAPACITY_RATIO_GOALS[baseline];
    const met = ratios.every((ratio) => ratio !== undefined && goal !== undefined && ratio >= goal);
    const verdict =
      goal === undefined ? '' : ` (goal ≥ ${goal}× in each: ${met ? 'met' : 'missed'})`;
    const shown = ratios.map((ratio) => (ratio === undefined ? '—' : `${ratio.toFixed(2)}×`));
    lines.push('', `ours ÷ ${baseline}, run by run: ${shown.join(', ')}${verdict}.`);
  }
  return lines.join('\n');
}

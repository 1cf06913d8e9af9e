// Which step a capacity search runs next and what its steps conclude, as pure functions of the
// steps so far. A coarse ladder brackets the break (the last step that held, the first that did
// not); fine steps then bisect that bracket until it is narrower than the resolution, so three
// searches can be compared to within a few per cent of the load instead of a ladder step of 25–33 %.
// A step whose load generator saturated never counts as held: it measured wrk, so it can only end
// the climb and bound the bracket from above, and the report says so.
import type { CapacityStep } from './capacity.js';

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
/**
 * Trials per step: a full search judges each step by the majority of up to three trials (two that
 * agree decide it), so one burst of load from elsewhere on a shared machine neither ends a search
 * early nor lifts it a step; `--quick` runs one.
 */
export const CAPACITY_STEP_TRIALS = Object.freeze({ full: 3, quick: 1 });
/**
 * Fine steps bisect the bracket until its width is at most this share of the load that held
 * (`--resolution`, in per cent): 5 % resolves a 3,000–4,000 bracket in at most three fine steps.
 */
export const CAPACITY_RESOLUTION = 0.05;

/** Held the goal with wrk unsaturated: the only kind of step a capacity may be. */
export function countsAsHeld(step: CapacityStep): boolean {
  return step.heldGoal && !step.generatorSaturated;
}

/**
 * Trials a step may add when wrk saturated: such a trial says nothing about the gate (most often
 * other work held wrk's core), so it is run again rather than counted, at most this many times.
 */
export const SATURATED_RETRIES = 2;

/** Trials with wrk keeping up that held and that broke the goal; saturated ones count for neither. */
function tally(trials: readonly CapacityStep[]): { held: number; broken: number } {
  const clean = trials.filter((trial) => !trial.generatorSaturated);
  const held = clean.filter((trial) => trial.heldGoal).length;
  return { held, broken: clean.length - held };
}

/**
 * True while the trials so far leave the majority of `planned` undecided: only trials whose wrk
 * kept up count, and a saturated one is replaced, up to SATURATED_RETRIES more trials.
 */
export function needsAnotherTrial(trials: readonly CapacityStep[], planned: number): boolean {
  const majority = Math.floor(planned / 2) + 1;
  const { held, broken } = tally(trials);
  if (held >= majority || broken >= majority) return false;
  return held + broken < planned && trials.length < planned + SATURATED_RETRIES;
}

/** The median trial by p99 of a non-empty list, so the table shows a run that happened. */
function medianByP99(trials: readonly CapacityStep[]): CapacityStep {
  const sorted = [...trials].sort((a, b) => a.p99Ms - b.p99Ms);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

/**
 * One step from its trials, by the majority of `planned` among the trials whose wrk kept up: held,
 * or broken. When saturated trials left it undecided the step is saturated: it measured wrk, not
 * the gate. The figures are those of the median trial by p99 among those that agree with the
 * verdict, so the table shows a run that happened.
 */
export function judgeTrials(
  trials: readonly CapacityStep[],
  planned = trials.length,
): CapacityStep {
  const majority = Math.floor(planned / 2) + 1;
  const { held, broken } = tally(trials);
  const saturated = trials.filter((trial) => trial.generatorSaturated);
  const clean = trials.filter((trial) => !trial.generatorSaturated);
  const heldGoal =
    held >= majority || (broken < majority && saturated.length === 0 && held * 2 > clean.length);
  const decided = heldGoal || broken >= majority || saturated.length === 0;
  const agreeing = decided ? clean.filter((trial) => trial.heldGoal === heldGoal) : saturated;
  return { ...medianByP99(agreeing), trials: { run: trials.length, held } };
}

/** The highest step that held the goal with wrk unsaturated; undefined when none did. */
export function capacityOf(steps: readonly CapacityStep[]): CapacityStep | undefined {
  return steps
    .filter(countsAsHeld)
    .reduce<CapacityStep | undefined>(
      (best, step) => (best === undefined || step.offeredRps > best.offeredRps ? step : best),
      undefined,
    );
}

/**
 * Where the search ended: the highest step that held (the capacity) and the lowest step above it
 * that did not (broken, or saturated wrk). `broke` is undefined when every step held.
 */
export function capacityBracket(steps: readonly CapacityStep[]): {
  readonly held: CapacityStep | undefined;
  readonly broke: CapacityStep | undefined;
} {
  const held = capacityOf(steps);
  const broke = steps
    .filter((step) => !countsAsHeld(step) && step.users > (held?.users ?? 0))
    .reduce<CapacityStep | undefined>(
      (lowest, step) => (lowest === undefined || step.users < lowest.users ? step : lowest),
      undefined,
    );
  return { held, broke };
}

/** Steps go on while they hold the goal with wrk keeping up. */
export function shouldContinue(step: CapacityStep): boolean {
  return countsAsHeld(step);
}

/**
 * The users of the next step, or undefined when the search is over. Up the plan while steps hold;
 * when the plan's first step already broke the goal, down by halves (to LEAST_CAPACITY_USERS)
 * until one holds. Once a step held and a step above it did not, the midpoint of that bracket,
 * until the bracket is at most `resolution` of the load that held (Infinity: no fine steps).
 */
export function nextStepUsers(
  plan: readonly number[],
  steps: readonly CapacityStep[],
  resolution = CAPACITY_RESOLUTION,
): number | undefined {
  const last = steps.at(-1);
  if (last === undefined) return plan[0];
  const { held, broke } = capacityBracket(steps);
  if (held === undefined) {
    const half = Math.floor(last.users / 2);
    return half >= LEAST_CAPACITY_USERS && last.users <= plan[0]! ? half : undefined;
  }
  if (broke === undefined) return plan.find((users) => users > held.users);
  if (broke.users - held.users <= resolution * held.users) return undefined;
  const middle = Math.round((held.users + broke.users) / 2);
  return middle > held.users && middle < broke.users ? middle : undefined;
}

/**
 * A system's capacity in each of several searches and how far apart they landed, in steps of the
 * fine resolution: (highest − lowest) ÷ (resolution × lowest). Within one step means the searches
 * agree as closely as the bisection can tell them apart. Infinity when a search found none.
 */
export function capacitySpread(
  resolution: number,
  runs: readonly (readonly CapacityStep[])[],
): { readonly capacities: readonly (number | undefined)[]; readonly spreadSteps: number } {
  const capacities = runs.map((steps) => capacityOf(steps)?.users);
  const found = capacities.filter((users) => users !== undefined);
  if (found.length < capacities.length || found.length === 0)
    return { capacities, spreadSteps: Infinity };
  const lowest = Math.min(...found);
  const spreadSteps = (Math.max(...found) - lowest) / (resolution * lowest);
  return { capacities, spreadSteps };
}

// Which load generator's figures a stress run may be judged on. A generator that needs most of its
// core queues requests itself, so the latency it reports is partly its own: such a run is flagged
// saturated, and the latency goals are judged on a run whose generator kept up. "Needs" is the CPU
// time it got plus the time it waited runnable for the core: on a machine shared with other work a
// starved generator shows little CPU time while it lags just the same.
export type GeneratorName = 'locust' | 'wrk';
export const GENERATOR_NAMES: readonly GeneratorName[] = Object.freeze(['locust', 'wrk']);

/** Above this share of its core (used + waited for) a generator's own event loop delays requests. */
export const SATURATED_LOAD_GENERATOR = 0.9;

/** One generator's totals over one run of the scenario against one system. */
export interface GeneratorFigures {
  readonly generator: GeneratorName;
  readonly requests: number;
  readonly failures: number;
  readonly rps: number;
  readonly p50Ms: number;
  readonly p95Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** The generator's CPU time over wall time while it measured; undefined when not sampled. */
  readonly cpuShare: number | undefined;
  /** Time it waited runnable for its core, over wall time; undefined when not known. */
  readonly waitShare: number | undefined;
}

/** CPU seconds per wall second of a generator's measured window; undefined for an empty window. */
export function cpuShare(usage: LoadGeneratorUsage | undefined): number | undefined {
  return usage === undefined || usage.wallSeconds <= 0
    ? undefined
    : usage.cpuSeconds / usage.wallSeconds;
}

/** Run-queue wait per wall second of the same window; undefined when not sampled. */
export function waitShare(usage: LoadGeneratorUsage | undefined): number | undefined {
  return usage?.waitSeconds === undefined || usage.wallSeconds <= 0
    ? undefined
    : usage.waitSeconds / usage.wallSeconds;
}

/** The share of its core the generator needed: CPU it got plus CPU it waited for. */
export function demandShare(figures: Pick<GeneratorFigures, 'cpuShare' | 'waitShare'>): number {
  return (figures.cpuShare ?? NaN) + (figures.waitShare ?? 0);
}

/** A run whose generator's share is unknown cannot be shown to have kept up. */
export function isSaturated(figures: Pick<GeneratorFigures, 'cpuShare' | 'waitShare'>): boolean {
  return figures.cpuShare === undefined || demandShare(figures) >= SATURATED_LOAD_GENERATOR;
}

/**
 * The run the latency goals are judged on: among the runs whose generator was not saturated, the
 * one whose generator had the most headroom. Undefined when every generator was saturated.
 */
export function judgedRun(runs: readonly GeneratorFigures[]): GeneratorFigures | undefined {
  return runs
    .filter((run) => !isSaturated(run))
    .reduce<GeneratorFigures | undefined>(
      (best, run) => (best === undefined || demandShare(run) < demandShare(best) ? run : best),
      undefined,
    );
}

/** `locust,wrk` → the generators in that order; throws a TypeError naming unknown ones. */
export function parseGenerators(text: string): GeneratorName[] {
  const names = text
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  const unknown = names.filter((name) => !(GENERATOR_NAMES as readonly string[]).includes(name));
  if (unknown.length > 0)
    throw new TypeError(
      `unknown generator ${unknown.map((n) => `"${n}"`).join(', ')} (known: ${GENERATOR_NAMES.join(', ')})`,
    );
  if (names.length === 0) throw new TypeError('"--generators" lists no generator');
  return [...new Set(names)] as GeneratorName[];
}

/**
 * How busy the load generator was once every user had spawned (the whole run if they never all
 * did): near 100 % of its core, locust itself delays requests.
 */
export interface LoadGeneratorUsage {
  /** locust's user + system CPU time in that window. */
  readonly cpuSeconds: number;
  /** Time its threads were runnable but waited for the core (other work on it), when known. */
  readonly waitSeconds?: number;
  /** The window's wall time, up to the last progress tick before locust exited. */
  readonly wallSeconds: number;
}

/** A generator's usage between two samples of its CPU time, wall clock and run-queue wait. */
export function usageBetween(
  start: { cpu: number; wall: number; wait: number },
  end: { cpu: number; wall: number; wait: number },
): LoadGeneratorUsage {
  return {
    cpuSeconds: end.cpu - start.cpu,
    wallSeconds: end.wall - start.wall,
    waitSeconds: end.wait - start.wait,
  };
}

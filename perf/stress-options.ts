// Command-line options of `npm run stress`, parsed once into a frozen object; every problem is
// reported together.
import { BASELINE_NAMES } from './baselines.js';
import { GENERATOR_NAMES, parseGenerators, type GeneratorName } from './generators.js';
import { DEFAULT_CFS_PERIOD_US, PROFILES, type ResourceProfile } from './limits.js';
import { CAPACITY_RESOLUTION, CAPACITY_STEP_SECONDS, CAPACITY_STEP_TRIALS } from './capacity.js';

export const SYSTEM_NAMES = ['ours', ...BASELINE_NAMES] as const;
export type SystemName = (typeof SYSTEM_NAMES)[number];

export interface StressOptions {
  readonly systems: readonly SystemName[];
  /** Each system is measured by each of these, in this order, one after the other. */
  readonly generators: readonly GeneratorName[];
  readonly profile: ResourceProfile;
  readonly users: number;
  readonly spawnRate: number;
  readonly durationSeconds: number;
  readonly outDir: string | undefined;
  /** `process`: local processes in cgroups; `docker`: docker-compose-stress.yaml's containers. */
  readonly engine: 'process' | 'docker';
  /** Raise the users step by step under wrk until the latency goal breaks (perf/capacity.ts). */
  readonly findCapacity: boolean;
  /** `--find-capacity`: whole searches in a row, to report how far their capacities spread. */
  readonly runs: number;
  /**
   * `--find-capacity`: fine steps bisect the bracket between the last step that held and the first
   * that did not until it is at most this share of the load (Infinity: coarse steps only).
   */
  readonly resolution: number;
  readonly quick: boolean;
  readonly help: boolean;
}

export const STRESS_DEFAULTS = Object.freeze({
  users: 2500,
  spawnRate: 50,
  durationSeconds: 300,
  quickSeconds: 60,
});

export const STRESS_USAGE = `usage: npm run stress -- [options]
  --systems LIST     comma-separated, from ${SYSTEM_NAMES.join(', ')} (default: all)
  --generators LIST  comma-separated, from ${GENERATOR_NAMES.join(', ')} (default: both)
  --profile NAME     study (0.5 CPU, 400 MB per service) or tight (0.25 CPU, 64 MB) (default: study)
  --users N          simulated users (default: ${STRESS_DEFAULTS.users})
  --spawn-rate N     users started per second (default: ${STRESS_DEFAULTS.spawnRate})
  --duration T       per system and generator, seconds or e.g. 90s, 5m (default: 5m)
  --quick            ${STRESS_DEFAULTS.quickSeconds} s per system unless --duration is given
  --out DIR          results directory (default: stresstest/results/<timestamp>)
  --cfs-period MS    process engine: the CFS period of each gate service's CPU quota, 1 to 1000 ms;
                     the quota stays the profile's share of it (default: ${DEFAULT_CFS_PERIOD_US / 1000}, the kernel's and Docker's)
  --engine NAME      process (local processes in cgroups) or docker (docker-compose-stress.yaml)
                     (default: process)
  --find-capacity    wrk at rising users until p99 > 100 ms or a failure; --duration is per step
                     (default ${CAPACITY_STEP_SECONDS.full} s, --quick: two small steps of ${CAPACITY_STEP_SECONDS.quick} s);
                     each step is judged by the majority of ${CAPACITY_STEP_TRIALS.full} trials (--quick: 1)
  --resolution PCT   with --find-capacity: fine steps between the last step that held and the
                     first that broke, until they are PCT % of the load apart (default ${CAPACITY_RESOLUTION * 100};
                     --quick: none)
  --runs N           with --find-capacity: N searches in a row, and the spread of their capacities
                     in fine steps (default 1)`;

/** Parses `90`, `90s`, `5m`, `1h` into seconds; undefined when malformed or not positive. */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d+)(s|m|h)?$/.exec(text.trim());
  if (!match) return undefined;
  const seconds = Number(match[1]) * { s: 1, m: 60, h: 3600 }[(match[2] ?? 's') as 's' | 'm' | 'h'];
  return seconds > 0 ? seconds : undefined;
}

function positiveInteger(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d+$/.test(text)) return undefined;
  const value = Number(text);
  return value > 0 ? value : undefined;
}

/** Parses argv (without node and script); throws one TypeError naming every bad option. */
export function parseStressOptions(argv: readonly string[]): StressOptions {
  const problems: string[] = [];
  const values = new Map<string, string | undefined>();
  const flags = new Set(['--quick', '--find-capacity', '--help', '-h']);
  const valued = new Set([
    '--systems',
    '--generators',
    '--profile',
    '--users',
    '--spawn-rate',
    '--duration',
    '--out',
    '--engine',
    '--runs',
    '--resolution',
    '--cfs-period',
  ]);
  for (let i = 0; i < argv.length; i++) {
    const raw = argv[i]!;
    const [name, inline] = raw.includes('=')
      ? [raw.slice(0, raw.indexOf('=')), raw.slice(raw.indexOf('=') + 1)]
      : [raw, undefined];
    if (flags.has(name)) values.set(name, '');
    else if (valued.has(name)) {
      const value = inline ?? argv[++i];
      if (value === undefined || value.startsWith('--')) problems.push(`"${name}" needs a value`);
      values.set(name, value);
    } else problems.push(`unknown option "${raw}"`);
  }

  let systems: SystemName[] = [...SYSTEM_NAMES];
  const systemsText = values.get('--systems');
  if (systemsText !== undefined) {
    systems = [];
    for (const name of systemsText
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)) {
      if ((SYSTEM_NAMES as readonly string[]).includes(name)) {
        if (!systems.includes(name as SystemName)) systems.push(name as SystemName);
      } else problems.push(`unknown system "${name}" (known: ${SYSTEM_NAMES.join(', ')})`);
    }
    if (systems.length === 0 && problems.length === 0) problems.push('"--systems" lists no system');
  }

  let generators: GeneratorName[] = [...GENERATOR_NAMES];
  const generatorsText = values.get('--generators');
  if (generatorsText !== undefined) {
    try {
      generators = parseGenerators(generatorsText);
    } catch (error) {
      problems.push((error as Error).message);
    }
  }

  const profileName = values.get('--profile') ?? 'study';
  const profile = PROFILES[profileName as ResourceProfile['name']];
  if (!profile)
    problems.push(`unknown profile "${profileName}" (known: ${Object.keys(PROFILES).join(', ')})`);

  const numberOption = (name: string, fallback: number): number => {
    if (!values.has(name)) return fallback;
    const parsed = positiveInteger(values.get(name));
    if (parsed === undefined) problems.push(`"${name}" must be a positive integer`);
    return parsed ?? fallback;
  };
  const users = numberOption('--users', STRESS_DEFAULTS.users);
  const spawnRate = numberOption('--spawn-rate', STRESS_DEFAULTS.spawnRate);

  const findCapacity = values.has('--find-capacity');
  const quick = values.has('--quick');
  const runs = numberOption('--runs', 1);
  if (values.has('--runs') && !findCapacity) problems.push('"--runs" needs --find-capacity');
  let resolution = quick ? Infinity : CAPACITY_RESOLUTION;
  if (values.has('--resolution')) {
    const percent = Number(values.get('--resolution'));
    if (!findCapacity) problems.push('"--resolution" needs --find-capacity');
    else if (!(percent >= 1 && percent <= 50))
      problems.push('"--resolution" must be a percentage from 1 to 50');
    else resolution = percent / 100;
  }
  let durationSeconds: number = findCapacity
    ? CAPACITY_STEP_SECONDS[quick ? 'quick' : 'full']
    : quick
      ? STRESS_DEFAULTS.quickSeconds
      : STRESS_DEFAULTS.durationSeconds;
  if (values.has('--duration')) {
    const parsed = parseDuration(values.get('--duration') ?? '');
    if (parsed === undefined)
      problems.push('"--duration" must be a positive number of seconds, or like 90s, 5m');
    else durationSeconds = parsed;
  }

  const engine = values.get('--engine') ?? 'process';
  if (engine !== 'process' && engine !== 'docker')
    problems.push(`unknown engine "${engine}" (known: process, docker)`);
  let cfsPeriodUs = DEFAULT_CFS_PERIOD_US;
  if (values.has('--cfs-period')) {
    const ms = positiveInteger(values.get('--cfs-period'));
    // Docker's `cpus` fixes the period at 100 ms (it refuses a period beside it).
    if (engine === 'docker') problems.push('"--cfs-period" needs the process engine');
    else if (ms === undefined || ms > 1000)
      problems.push('"--cfs-period" must be a whole number of milliseconds from 1 to 1000');
    else cfsPeriodUs = ms * 1000;
  }

  if (problems.length > 0) throw new TypeError(`invalid options: ${problems.join('; ')}`);
  return Object.freeze({
    systems: Object.freeze(systems),
    generators: Object.freeze(generators),
    profile:
      profile && cfsPeriodUs !== profile.cfsPeriodUs
        ? Object.freeze({ ...profile, cfsPeriodUs })
        : profile,
    users,
    spawnRate,
    durationSeconds,
    outDir: values.get('--out'),
    engine: engine as StressOptions['engine'],
    findCapacity,
    runs,
    resolution,
    quick,
    help: values.has('--help') || values.has('-h'),
  });
}

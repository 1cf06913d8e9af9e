// report.md of a stress run: the study's table per system, one side-by-side summary with the
// study's published figures, each load generator's run with its own CPU share (flagged when
// saturated), the goals of the experiment as met / missed — latency judged on a generator that kept
// up — and the resources each service used. The study: docs/study.md.
import {
  cpuShare,
  isSaturated,
  judgedRun,
  SATURATED_LOAD_GENERATOR,
  waitShare,
  type GeneratorFigures,
  type GeneratorName,
} from './generators.js';
import type { CsvRow } from './locust-csv.js';
import type { CpuThrottling, LimitSupport, ResourceProfile } from './limits.js';
import type { LoadGeneratorUsage } from './generators.js';
import type { ServerLatency } from './server-latency.js';
import type { ServiceUsage } from './process-stats.js';
import { STUDY_BEST_RPS, STUDY_FIGURES } from './study-figures.js';
import type { WrkStudyResult } from './wrk-study.js';

export interface ServiceResult extends ServiceUsage {
  readonly limited: boolean;
  readonly cgroupPeakBytes: number | undefined;
  /** CFS throttling during the measurement, when limited by cgroup. */
  readonly throttling?: CpuThrottling | undefined;
}

/** The same scenario against the same system, driven by wrk (after locust, when both ran). */
export interface WrkRunResult {
  readonly result: WrkStudyResult;
  readonly services: readonly ServiceResult[];
  /** wrk's own CPU use once its connections had opened. */
  readonly loadGenerator: LoadGeneratorUsage;
  readonly serverLatency?: readonly ServerLatency[] | undefined;
}

export interface SystemResult {
  readonly name: string;
  /** Rows of locust's `_stats.csv` (per endpoint and Aggregated); empty when locust did not run. */
  readonly stats: readonly CsvRow[];
  readonly services: readonly ServiceResult[];
  /** Report-relative paths of locust's outputs. */
  readonly files: { readonly csv: string; readonly html: string };
  /** locust's own CPU use while it measured this system. */
  readonly loadGenerator?: LoadGeneratorUsage | undefined;
  /** Per-path latency from the gate's access log, when it writes one. */
  readonly serverLatency?: readonly ServerLatency[] | undefined;
  /** The wrk run, when wrk was one of the generators. */
  readonly wrk?: WrkRunResult | undefined;
  /** Set when the system could not be started or measured. */
  readonly error?: string;
}

export interface RunInfo {
  readonly startedAt: Date;
  readonly generators: readonly GeneratorName[];
  readonly command: string;
  readonly profile: ResourceProfile;
  readonly users: number;
  readonly spawnRate: number;
  readonly durationSeconds: number;
  readonly support: LimitSupport;
  readonly serviceCpus: string;
  readonly loadCpus: string;
  readonly machine: string;
  readonly chartFile: string;
  /** How the systems ran; `process` when absent. */
  readonly engine?: 'process' | 'docker';
}

export interface Goal {
  readonly goal: string;
  readonly value: string;
  readonly verdict: 'met' | 'missed' | 'n/a';
}

const STUDY_COLUMNS = [
  'Type',
  'Name',
  '# Requests',
  '# Fails',
  'Median (ms)',
  '95%ile (ms)',
  '99%ile (ms)',
  'Average (ms)',
  'Min (ms)',
  'Max (ms)',
  'Average size (bytes)',
  'RPS',
  'Failures/s',
];

function num(row: CsvRow | undefined, column: string): number {
  const value = Number(row?.[column]);
  return Number.isFinite(value) ? value : NaN;
}

function fixed(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : 'n/a';
}

function int(value: number): string {
  return Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : 'n/a';
}

function mb(bytes: number | undefined): string {
  return bytes === undefined ? '—' : (bytes / 1024 / 1024).toFixed(1);
}

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  return [
    `| ${header.join(' | ')} |`,
    `| ${header.map(() => '---').join(' | ')} |`,
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ].join('\n');
}

export function aggregated(stats: readonly CsvRow[]): CsvRow | undefined {
  return stats.find((row) => row.Name === 'Aggregated');
}

/** The study's table: one row per endpoint and the aggregate, with the study's column names. */
export function studyTable(stats: readonly CsvRow[]): string {
  return table(
    STUDY_COLUMNS,
    stats.map((row) => [
      row.Type ?? '',
      row.Name ?? '',
      int(num(row, 'Request Count')),
      int(num(row, 'Failure Count')),
      int(num(row, 'Median Response Time')),
      int(num(row, '95%')),
      int(num(row, '99%')),
      fixed(num(row, 'Average Response Time'), 2),
      int(num(row, 'Min Response Time')),
      int(num(row, 'Max Response Time')),
      fixed(num(row, 'Average Content Size'), 2),
      fixed(num(row, 'Requests/s'), 1),
      fixed(num(row, 'Failures/s'), 1),
    ]),
  );
}

/** The locust run's aggregate as generator figures; undefined when locust did not run. */
export function locustFigures(result: SystemResult): GeneratorFigures | undefined {
  const total = aggregated(result.stats);
  if (total === undefined) return undefined;
  return {
    generator: 'locust',
    requests: num(total, 'Request Count'),
    failures: num(total, 'Failure Count'),
    rps: num(total, 'Requests/s'),
    p50Ms: num(total, 'Median Response Time'),
    p95Ms: num(total, '95%'),
    p99Ms: num(total, '99%'),
    maxMs: num(total, 'Max Response Time'),
    cpuShare: cpuShare(result.loadGenerator),
    waitShare: waitShare(result.loadGenerator),
  };
}

export function wrkFigures(run: WrkRunResult): GeneratorFigures {
  const { result } = run;
  return {
    generator: 'wrk',
    requests: result.requests,
    failures: result.failures,
    rps: result.rps,
    p50Ms: result.latencyMs.p50,
    p95Ms: result.latencyMs.p95,
    p99Ms: result.latencyMs.p99,
    maxMs: result.latencyMs.max,
    cpuShare: cpuShare(run.loadGenerator),
    waitShare: waitShare(run.loadGenerator),
  };
}

/** Every generator's figures for one system, in the order they ran. */
export function generatorRuns(result: SystemResult): GeneratorFigures[] {
  const locust = locustFigures(result);
  return [...(locust ? [locust] : []), ...(result.wrk ? [wrkFigures(result.wrk)] : [])];
}

/** One goal with each run's value; the verdict stands on `judged` (failures: on every run). */
export interface StressGoal extends Goal {
  readonly values: readonly string[];
}

/**
 * The goals of the experiment for one system. Failures count on every run. Latency and
 * throughput are judged on the run whose generator kept up (`judgedRun`), and not at all when
 * every generator was saturated; throughput only with the study's 2500 users, since fewer users
 * cannot offer 10× the study's rate.
 */
export function stressGoals(
  profile: ResourceProfile,
  users: number,
  runs: readonly GeneratorFigures[],
): { goals: StressGoal[]; judged: GeneratorFigures | undefined } {
  const judged = judgedRun(runs);
  const p99Limit = profile.name === 'study' ? 100 : 250;
  const verdict = (ok: boolean): Goal['verdict'] => (ok ? 'met' : 'missed');
  const onJudged = (ok: (run: GeneratorFigures) => boolean): Goal['verdict'] =>
    judged === undefined ? 'n/a' : verdict(ok(judged));
  const flag = (run: GeneratorFigures, text: string) =>
    isSaturated(run) ? `${text} (saturated)` : text;
  const goals: StressGoal[] = [
    {
      goal: '0 failures',
      values: runs.map((run) => int(run.failures)),
      value: int(runs.reduce((sum, run) => sum + run.failures, 0)),
      verdict: runs.length === 0 ? 'n/a' : verdict(runs.every((run) => run.failures === 0)),
    },
    {
      goal: `p99 ≤ ${p99Limit} ms`,
      values: runs.map((run) => flag(run, `${int(run.p99Ms)} ms`)),
      value: judged ? `${int(judged.p99Ms)} ms` : 'n/a',
      verdict: onJudged((run) => run.p99Ms <= p99Limit),
    },
  ];
  if (profile.name === 'study') {
    const target = 10 * STUDY_BEST_RPS;
    goals.push({
      goal: `requests/s ≥ 10× the study's ${STUDY_BEST_RPS} (${int(target)})`,
      values: runs.map((run) => flag(run, fixed(run.rps, 1))),
      value: judged ? fixed(judged.rps, 1) : 'n/a',
      verdict: users >= 2500 ? onJudged((run) => run.rps >= target) : 'n/a',
    });
  }
  return { goals, judged };
}

/** Which run the verdicts stand on, and each generator's CPU share. */
export function judgedLine(runs: readonly GeneratorFigures[], loadCpus: string): string {
  const shares = runs.map(
    (run) =>
      `${run.generator} ${run.cpuShare === undefined ? 'not sampled' : `${fixed(run.cpuShare * 100, 0)} %${run.waitShare === undefined ? '' : ` + ${fixed(run.waitShare * 100, 0)} % waiting`}`}${isSaturated(run) ? ', saturated' : ''}`,
  );
  const judged = judgedRun(runs);
  return judged === undefined
    ? `Latency and throughput not judged: every load generator was saturated (needed ≥ ${SATURATED_LOAD_GENERATOR * 100} % of CPU ${loadCpus}, used or waited for: ${shares.join('; ')}), so their latencies are partly their own queueing.`
    : `Latency and throughput judged on the ${judged.generator} run, whose generator kept up (CPU ${loadCpus} share: ${shares.join('; ')}).`;
}

function summaryTable(results: readonly SystemResult[]): string {
  const rows = results
    .filter((result) => aggregated(result.stats))
    .map((result) => {
      const total = aggregated(result.stats);
      const requests = num(total, 'Request Count');
      const failures = num(total, 'Failure Count');
      const limited = result.services.filter((s) => s.limited);
      return [
        result.name,
        int(requests),
        `${int(failures)} (${fixed((failures / requests) * 100, 2)} %)`,
        fixed(num(total, 'Requests/s'), 1),
        int(num(total, 'Median Response Time')),
        int(num(total, '95%')),
        int(num(total, '99%')),
        int(num(total, 'Max Response Time')),
        mb(limited.reduce((sum, s) => sum + s.peakRssBytes, 0)),
        fixed(
          limited.reduce((sum, s) => sum + s.cpuSeconds, 0),
          1,
        ),
      ];
    });
  for (const result of results) {
    if (!result.wrk) continue;
    const figures = wrkFigures(result.wrk);
    const limited = result.wrk.services.filter((s) => s.limited);
    rows.push([
      `${result.name} (wrk)`,
      int(figures.requests),
      `${int(figures.failures)} (${fixed((figures.failures / figures.requests) * 100, 2)} %)`,
      fixed(figures.rps, 1),
      int(figures.p50Ms),
      int(figures.p95Ms),
      int(figures.p99Ms),
      int(figures.maxMs),
      mb(limited.reduce((sum, s) => sum + s.peakRssBytes, 0)),
      fixed(
        limited.reduce((sum, s) => sum + s.cpuSeconds, 0),
        1,
      ),
    ]);
  }
  for (const study of STUDY_FIGURES) {
    rows.push([
      study.name,
      int(study.requests),
      `${int(study.failures)} (${fixed((study.failures / study.requests) * 100, 2)} %)`,
      fixed(study.rps, 1),
      int(study.medianMs),
      int(study.p95Ms),
      int(study.p99Ms),
      int(study.maxMs),
      '—',
      '—',
    ]);
  }
  return table(
    [
      'system',
      'requests',
      'failures',
      'requests/s',
      'median (ms)',
      'p95 (ms)',
      'p99 (ms)',
      'max (ms)',
      'gate peak RSS (MB)',
      'gate CPU (s)',
    ],
    rows,
  );
}

/** The share of CFS periods that ended throttled; 0 when unknown. */
function throttledShare(t: CpuThrottling | undefined): number {
  return t === undefined || t.periods === 0 ? 0 : t.throttledPeriods / t.periods;
}

function throttled(t: CpuThrottling | undefined): string {
  if (t === undefined || t.periods === 0) return '—';
  return `${fixed(throttledShare(t) * 100, 0)} % of ${int(t.periods)} periods, ${fixed(t.throttledSeconds, 1)} s`;
}

/**
 * Where the time went: CPU per request shows what each service costs, throttling shows when a
 * quota (not the work) held requests back, and locust's own CPU shows when the client did.
 */
function resourcesTable(
  run: RunInfo,
  services: readonly ServiceResult[],
  requests: number,
): string {
  const limits = `${run.profile.cpu} CPU, ${run.profile.memoryMb} MB`;
  return table(
    [
      'service',
      'limits',
      'peak RSS (MB)',
      'CPU (s)',
      'CPU µs / request',
      'CFS throttled',
      'cgroup memory peak (MB)',
    ],
    services.map((s) => [
      s.name,
      s.limited && run.support.mode === 'cgroup' ? limits : `pinned to CPU ${run.serviceCpus}`,
      mb(s.peakRssBytes),
      s.cpuSeconds.toFixed(1),
      int((s.cpuSeconds * 1e6) / requests),
      throttled(s.throttling),
      mb(s.cgroupPeakBytes),
    ]),
  );
}

function loadGeneratorLine(
  generator: string,
  usage: LoadGeneratorUsage | undefined,
  cpus: string,
): string {
  const share = cpuShare(usage);
  if (share === undefined) return '';
  const waited = waitShare(usage);
  const verdict = isSaturated({ cpuShare: share, waitShare: waited })
    ? ': saturated, so its own queueing is part of the latencies above'
    : '';
  const window =
    generator === 'locust' ? 'once every user had spawned' : 'once its connections had opened';
  const wait =
    waited === undefined
      ? ''
      : ` and waited runnable for it ${fixed(waited * 100, 0)} % of the time`;
  return `Load generator: ${generator} used ${fixed(share * 100, 0)} % of CPU ${cpus}${wait} ${window}${verdict}.`;
}

/** A service throttled in at least this share of its CFS periods is held back by its quota. */
const QUOTA_BOUND = 0.5;

/**
 * One sentence naming what held a system back: its CPU quota (a gate service throttled in most
 * periods), else a saturated load generator, else nothing the run can see.
 */
export function bottleneckLine(result: SystemResult): string {
  return bottleneck(
    result.services,
    num(aggregated(result.stats), 'Request Count'),
    'locust',
    result.loadGenerator,
  );
}

function bottleneck(
  services: readonly ServiceResult[],
  requests: number,
  generator: string,
  load: LoadGeneratorUsage | undefined,
): string {
  const limited = services.filter((s) => s.limited && s.throttling !== undefined);
  const worst = limited.reduce<ServiceResult | undefined>(
    (most, s) =>
      most === undefined || throttledShare(s.throttling) > throttledShare(most.throttling)
        ? s
        : most,
    undefined,
  );
  if (worst !== undefined && throttledShare(worst.throttling) >= QUOTA_BOUND) {
    return `Bottleneck: the CPU quota. ${worst.name} needed ${int((worst.cpuSeconds * 1e6) / requests)} µs of CPU per request and was throttled in ${fixed(throttledShare(worst.throttling) * 100, 0)} % of its periods, so requests waited for the next one.`;
  }
  const loadShare = cpuShare(load) ?? 0;
  const demand = { cpuShare: cpuShare(load), waitShare: waitShare(load) };
  if (demand.cpuShare !== undefined && isSaturated(demand)) {
    const quota =
      worst === undefined
        ? ''
        : ` no gate service was throttled in more than ${fixed(throttledShare(worst.throttling) * 100, 0)} % of its periods, while`;
    const waited =
      demand.waitShare === undefined || demand.waitShare < 0.05
        ? ''
        : ` (and waited for it another ${fixed(demand.waitShare * 100, 0)} %: the core is shared with other work)`;
    return `Bottleneck: the load generator —${quota} ${generator} used ${fixed(loadShare * 100, 0)} % of its core${waited}, so much of the latency above is queueing in ${generator}, not in the gate.`;
  }
  return '';
}

function serverLatencyLine(latency: readonly ServerLatency[] | undefined): string {
  if (latency === undefined || latency.length === 0) return '';
  const paths = latency.map(
    (l) =>
      `${l.path} p50 ${int(l.p50Ms)} ms, p99 ${int(l.p99Ms)} ms, max ${int(l.maxMs)} ms (${int(l.count)} requests)`,
  );
  return `Inside the gate (NGINX \`$request_time\` from its access log, 1 ms resolution): ${paths.join('; ')}.`;
}

/** The wrk run of one system: its totals, the resources the gate used, and where the time went. */
function wrkSection(run: RunInfo, wrk: WrkRunResult): string[] {
  const { result } = wrk;
  const lines = [
    '### wrk',
    '',
    table(
      [
        'requests',
        '/hello',
        '/secret',
        'failures',
        'requests/s',
        'mean (ms)',
        'p50',
        'p90',
        'p95',
        'p99',
        'max',
      ],
      [
        [
          int(result.requests),
          int(result.helloRequests),
          int(result.secretRequests),
          `${int(result.failures)} (${int(result.socketErrors)} socket, ${int(result.statusErrors)} status ≥ 400)`,
          fixed(result.rps, 1),
          fixed(result.latencyMs.mean, 2),
          fixed(result.latencyMs.p50, 1),
          fixed(result.latencyMs.p90, 1),
          fixed(result.latencyMs.p95, 1),
          fixed(result.latencyMs.p99, 1),
          fixed(result.latencyMs.max, 1),
        ],
      ],
    ),
    '',
    'Requests issued per path (wrk counts latency for all paths together; latencies in ms).',
    '',
    resourcesTable(run, wrk.services, result.requests),
    '',
  ];
  for (const line of [
    serverLatencyLine(wrk.serverLatency),
    loadGeneratorLine('wrk', wrk.loadGenerator, run.loadCpus),
    bottleneck(wrk.services, result.requests, 'wrk', wrk.loadGenerator),
  ]) {
    if (line) lines.push(line, '');
  }
  return lines;
}

/** Renders report.md for a whole run. */
export function renderReport(run: RunInfo, results: readonly SystemResult[]): string {
  const limitsLine =
    run.engine === 'docker'
      ? `Docker per container (docker-compose-stress.yaml): cpus ${run.profile.cpu} and mem_limit ${run.profile.memoryMb}m for each gate container; support containers (dev IdP, the study's user-info NGINX) pinned only; locust in its own container on the host network`
      : run.support.mode === 'cgroup'
        ? `cgroup v1 per service: ${run.profile.cpu} CPU (CFS quota, ${run.profile.cfsPeriodUs / 1000} ms period) and ${run.profile.memoryMb} MB for each gate service; support services (dev IdP, the study's user-info NGINX) pinned only`
        : `**pinning only, no CPU or memory limits** (${run.support.reason})`;
  const lines: string[] = [
    `# Stress test ${run.startedAt.toISOString()}`,
    '',
    `- command: \`${run.command}\``,
    `- scenario: the study's — /hello weight 1, /secret weight 2, wait 0–1 s, ${run.users} users, ${run.durationSeconds} s per system and generator, a distinct token per user`,
    `- generators: ${run.generators.map((g) => (g === 'locust' ? `locust (users spawned ${run.spawnRate}/s)` : `wrk (one connection per user, think time from Lua \`delay()\`, all connections at once)`)).join(', then ')}; a generator using ≥ ${SATURATED_LOAD_GENERATOR * 100} % of its core is flagged saturated`,
    `- profile \`${run.profile.name}\`: ${limitsLine}`,
    `- services on CPU ${run.serviceCpus}, the load generator on CPU ${run.loadCpus}; each system started fresh, and measured by each generator in turn`,
    `- machine: ${run.machine}`,
    '',
    '## Side by side',
    '',
    summaryTable(results.filter((r) => !r.error)),
    '',
    '"gate" columns sum the limited services (ours: NGINX + verifier; study-njs and njs-verify: NGINX; study-node: Node).',
    'The study ran in Docker on a 2-vCPU e2-medium; its figures are copied from its report.',
    '',
    `![throughput and p99 over time](${run.chartFile})`,
    '',
  ];
  for (const result of results) {
    lines.push(`## ${result.name}`, '');
    if (result.error) {
      lines.push(`Not measured: ${result.error}`, '');
      continue;
    }
    const runs = generatorRuns(result);
    const { goals } = stressGoals(run.profile, run.users, runs);
    lines.push('Goals of the experiment:', '');
    lines.push(
      table(
        ['goal', ...runs.map((r) => r.generator), 'verdict'],
        goals.map((g) => [g.goal, ...g.values, g.verdict]),
      ),
      '',
      judgedLine(runs, run.loadCpus),
      '',
    );
    if (aggregated(result.stats)) {
      lines.push('### locust', '', studyTable(result.stats), '');
      lines.push(
        resourcesTable(run, result.services, num(aggregated(result.stats), 'Request Count')),
        '',
      );
      for (const line of [
        serverLatencyLine(result.serverLatency),
        loadGeneratorLine('locust', result.loadGenerator, run.loadCpus),
        bottleneckLine(result),
      ]) {
        if (line) lines.push(line, '');
      }
      lines.push(`Locust: [CSV](${result.files.csv}), [HTML report](${result.files.html})`, '');
    }
    if (result.wrk) lines.push(...wrkSection(run, result.wrk));
  }
  return lines.join('\n');
}

// report.md of a stress run: the study's table per system, one side-by-side summary with the
// study's published figures, the goals of the experiment as met / missed, and the resources each
// service used. The study: docs/study.md.
import type { CsvRow } from './locust-csv.js';
import type { CpuThrottling, LimitSupport, ResourceProfile } from './limits.js';
import type { LoadGeneratorUsage } from './locust.js';
import type { ServerLatency } from './server-latency.js';
import type { ServiceUsage } from './process-stats.js';
import { STUDY_BEST_RPS, STUDY_FIGURES } from './study-figures.js';

export interface ServiceResult extends ServiceUsage {
  readonly limited: boolean;
  readonly cgroupPeakBytes: number | undefined;
  /** CFS throttling during the measurement, when limited by cgroup. */
  readonly throttling?: CpuThrottling | undefined;
}

export interface SystemResult {
  readonly name: string;
  /** Rows of locust's `_stats.csv` (per endpoint and Aggregated). */
  readonly stats: readonly CsvRow[];
  readonly services: readonly ServiceResult[];
  /** Report-relative paths of locust's outputs. */
  readonly files: { readonly csv: string; readonly html: string };
  /** locust's own CPU use while it measured this system. */
  readonly loadGenerator?: LoadGeneratorUsage | undefined;
  /** Per-path latency from the gate's access log, when it writes one. */
  readonly serverLatency?: readonly ServerLatency[] | undefined;
  /** Set when the system could not be started or measured. */
  readonly error?: string;
}

export interface RunInfo {
  readonly startedAt: Date;
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

/**
 * The goals of the experiment for one system's aggregate. Throughput is only judged with the
 * study's 2500 users: with fewer users locust cannot offer 10× the study's rate at all.
 */
export function evaluateGoals(
  profile: ResourceProfile,
  users: number,
  total: CsvRow | undefined,
): Goal[] {
  const failures = num(total, 'Failure Count');
  const p99 = num(total, '99%');
  const rps = num(total, 'Requests/s');
  const p99Limit = profile.name === 'study' ? 100 : 250;
  const verdict = (ok: boolean): Goal['verdict'] => (ok ? 'met' : 'missed');
  const goals: Goal[] = [
    { goal: '0 failures', value: int(failures), verdict: verdict(failures === 0) },
    { goal: `p99 ≤ ${p99Limit} ms`, value: `${int(p99)} ms`, verdict: verdict(p99 <= p99Limit) },
  ];
  if (profile.name === 'study') {
    const target = 10 * STUDY_BEST_RPS;
    goals.push({
      goal: `requests/s ≥ 10× the study's ${STUDY_BEST_RPS} (${int(target)})`,
      value: fixed(rps, 1),
      verdict: users >= 2500 ? verdict(rps >= target) : 'n/a',
    });
  }
  return goals;
}

function summaryTable(results: readonly SystemResult[]): string {
  const rows = results.map((result) => {
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

/** Above this share of its core, locust's own event loop delays requests and inflates latency. */
const SATURATED_LOAD_GENERATOR = 0.9;

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
function resourcesTable(run: RunInfo, result: SystemResult): string {
  const limits = `${run.profile.cpu} CPU, ${run.profile.memoryMb} MB`;
  const requests = num(aggregated(result.stats), 'Request Count');
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
    result.services.map((s) => [
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

function loadGeneratorLine(usage: LoadGeneratorUsage | undefined, cpus: string): string {
  if (usage === undefined || usage.wallSeconds === 0) return '';
  const share = usage.cpuSeconds / usage.wallSeconds;
  const verdict =
    share >= SATURATED_LOAD_GENERATOR
      ? ': saturated, so its own queueing is part of the latencies above'
      : '';
  return `Load generator: locust used ${fixed(share * 100, 0)} % of CPU ${cpus} once every user had spawned${verdict}.`;
}

/** A service throttled in at least this share of its CFS periods is held back by its quota. */
const QUOTA_BOUND = 0.5;

/**
 * One sentence naming what held a system back: its CPU quota (a gate service throttled in most
 * periods), else a saturated load generator, else nothing the run can see.
 */
export function bottleneckLine(result: SystemResult): string {
  const requests = num(aggregated(result.stats), 'Request Count');
  const limited = result.services.filter((s) => s.limited && s.throttling !== undefined);
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
  const load = result.loadGenerator;
  const loadShare = load && load.wallSeconds > 0 ? load.cpuSeconds / load.wallSeconds : 0;
  if (loadShare >= SATURATED_LOAD_GENERATOR) {
    const quota =
      worst === undefined
        ? ''
        : ` no gate service was throttled in more than ${fixed(throttledShare(worst.throttling) * 100, 0)} % of its periods, while`;
    return `Bottleneck: the load generator —${quota} locust used ${fixed(loadShare * 100, 0)} % of its core, so much of the latency above is queueing in locust, not in the gate.`;
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

/** Renders report.md for a whole run. */
export function renderReport(run: RunInfo, results: readonly SystemResult[]): string {
  const limitsLine =
    run.support.mode === 'cgroup'
      ? `cgroup v1 per service: ${run.profile.cpu} CPU (CFS quota) and ${run.profile.memoryMb} MB for each gate service; support services (dev IdP, the study's user-info NGINX) pinned only`
      : `**pinning only, no CPU or memory limits** (${run.support.reason})`;
  const lines: string[] = [
    `# Stress test ${run.startedAt.toISOString()}`,
    '',
    `- command: \`${run.command}\``,
    `- scenario: the study's — /hello weight 1, /secret weight 2, wait 0–1 s, ${run.users} users spawned ${run.spawnRate}/s, ${run.durationSeconds} s per system, a distinct token per user`,
    `- profile \`${run.profile.name}\`: ${limitsLine}`,
    `- services on CPU ${run.serviceCpus}, locust on CPU ${run.loadCpus}; each system started fresh`,
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
    lines.push(studyTable(result.stats), '');
    lines.push('Goals of the experiment:', '');
    lines.push(
      table(
        ['goal', 'value', 'verdict'],
        evaluateGoals(run.profile, run.users, aggregated(result.stats)).map((g) => [
          g.goal,
          g.value,
          g.verdict,
        ]),
      ),
      '',
    );
    lines.push(resourcesTable(run, result), '');
    for (const line of [
      serverLatencyLine(result.serverLatency),
      loadGeneratorLine(result.loadGenerator, run.loadCpus),
      bottleneckLine(result),
    ]) {
      if (line) lines.push(line, '');
    }
    lines.push(`Locust: [CSV](${result.files.csv}), [HTML report](${result.files.html})`, '');
  }
  return lines.join('\n');
}

// Runs Debian's locust headless on the load-generator core against one gate, writing its CSV and
// HTML report, and reports progress from the history CSV it appends to every second.
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseLocustCsv } from './locust-csv.js';
import { CLOCK_TICKS, exitOf, parseStat, runQueueWaitSeconds } from './process-stats.js';
import { usageBetween, type LoadGeneratorUsage } from './generators.js';

export const LOCUSTFILE = fileURLToPath(new URL('../stresstest/locustfile.py', import.meta.url));
/** Debian's python3-locust runs with the system python, not whatever python is first on PATH. */
export const PYTHON = '/usr/bin/python3';
/** The tag docker-compose-stress.yaml gives the images it builds (SECRET_GATE_TAG, else dev). */
export const LOCUST_IMAGE = `secret-gate-locust:${process.env.SECRET_GATE_TAG ?? 'dev'}`;

export interface LocustRun {
  readonly host: string;
  readonly users: number;
  readonly spawnRate: number;
  readonly durationSeconds: number;
  readonly tokenFile: string;
  /** Path prefix for `_stats.csv`, `_stats_history.csv`, `_failures.csv`. */
  readonly csvPrefix: string;
  readonly htmlFile: string;
  readonly logFile: string;
  /** The core locust runs on (the other one holds the services). */
  readonly cpus: string;
  /** Run in a container of the locust image (`--engine docker`): its name, host dirs it needs. */
  readonly container?: { readonly name: string; readonly mounts: readonly string[] };
}

export interface Progress {
  readonly elapsedSeconds: number;
  readonly users: number;
  readonly rps: number;
  readonly p99Ms: number | undefined;
  readonly failures: number;
}

/** The newest aggregated row of a history CSV as progress, or undefined before the first row. */
export function readProgress(historyCsv: string, startedAt: number): Progress | undefined {
  let text: string;
  try {
    text = readFileSync(historyCsv, 'utf8');
  } catch {
    return undefined;
  }
  const rows = parseLocustCsv(text).filter((row) => row.Name === 'Aggregated');
  const last = rows.at(-1);
  if (!last) return undefined;
  const p99 = Number(last['99%']);
  return {
    elapsedSeconds: Number(last.Timestamp) - startedAt,
    users: Number(last['User Count']),
    rps: Number(last['Requests/s']),
    p99Ms: Number.isFinite(p99) ? p99 : undefined,
    failures: Number(last['Total Failure Count']),
  };
}

/** The locust command line for one run (pinned with taskset). */
export function locustArgs(run: LocustRun): string[] {
  return [
    '-c',
    run.cpus,
    PYTHON,
    '-m',
    'locust',
    '-f',
    LOCUSTFILE,
    '--headless',
    '--host',
    run.host,
    '--users',
    String(run.users),
    '--spawn-rate',
    String(run.spawnRate),
    '--run-time',
    `${run.durationSeconds}s`,
    '--stop-timeout',
    '5',
    '--csv',
    run.csvPrefix,
    '--csv-full-history',
    '--html',
    run.htmlFile,
    '--only-summary',
    '--loglevel',
    'WARNING',
  ];
}

/** Runs locust to completion, calling `onProgress` every couple of seconds. */
export async function runLocust(
  run: LocustRun,
  onProgress: (progress: Progress) => void,
): Promise<LoadGeneratorUsage> {
  const log = openSync(run.logFile, 'a');
  const [command, args] = run.container
    ? [
        'docker',
        locustContainerCommand(
          run.container.name,
          run.cpus,
          run.tokenFile,
          run.container.mounts,
          locustArgs(run),
        ),
      ]
    : ['taskset', locustArgs(run)];
  const child = spawn(command, args, {
    env: { ...process.env, SG_STRESS_TOKENS: run.tokenFile },
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  // taskset execs locust, so the child's PID is locust's own; in a container it is the
  // container's first process (taskset exec'd there too), seen from this PID namespace.
  let locustPid = run.container ? 0 : (child.pid ?? 0);
  const findLocust = () => {
    if (locustPid > 0 || !run.container) return locustPid;
    try {
      locustPid = Number(
        execFileSync('docker', ['inspect', '--format', '{{.State.Pid}}', run.container.name], {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'ignore'],
        }).trim(),
      );
    } catch {
      locustPid = 0; // not created yet
    }
    return locustPid;
  };
  const startedAt = Date.now() / 1000;
  let windowStart: { cpu: number; wall: number; wait: number } | undefined;
  let latest: { cpu: number; wall: number; wait: number } | undefined;
  let atFullLoad = false;
  const timer = setInterval(() => {
    const progress = readProgress(`${run.csvPrefix}_stats_history.csv`, startedAt);
    if (progress) onProgress(progress);
    let stat: ReturnType<typeof parseStat>;
    try {
      stat = parseStat(readFileSync(`/proc/${findLocust()}/stat`, 'utf8'));
    } catch {
      stat = undefined; // exited between ticks
    }
    if (!stat) return;
    latest = {
      cpu: stat.cpuTicks / CLOCK_TICKS,
      wall: Date.now() / 1000,
      wait: runQueueWaitSeconds(findLocust()),
    };
    windowStart ??= latest;
    if (!atFullLoad && (progress?.users ?? 0) >= run.users) {
      atFullLoad = true;
      windowStart = latest;
    }
  }, 2000);
  try {
    // Stopped with the runner if it is interrupted.
    const code = await exitOf(child);
    // Locust exits 1 when any request failed; that is a result, not a harness error.
    if (code !== 0 && code !== 1)
      throw new Error(`locust exited with code ${code}; see ${run.logFile}`);
    return windowStart && latest
      ? usageBetween(windowStart, latest)
      : { cpuSeconds: 0, wallSeconds: 0 };
  } finally {
    clearInterval(timer);
  }
}

/** `docker run` of the locust image on the host network and the load core, paths mounted as is. */
export function locustContainerCommand(
  name: string,
  cpus: string,
  tokenFile: string,
  mounts: readonly string[],
  locustArgs: readonly string[],
): string[] {
  return [
    'run',
    '--rm',
    '--name',
    name,
    '--network',
    'host',
    '--cpuset-cpus',
    cpus,
    '--user',
    `${process.getuid?.() ?? 0}:${process.getgid?.() ?? 0}`,
    '-e',
    `SG_STRESS_TOKENS=${tokenFile}`,
    ...[...new Set(mounts)].flatMap((dir) => ['-v', `${dir}:${dir}`]),
    '--entrypoint',
    'taskset',
    LOCUST_IMAGE,
    ...locustArgs,
  ];
}

// `npm run stress`: the study's experiment against each system in turn (ours and the comparison
// baselines), each started fresh under per-service limits, services on one core and the load
// generator on the other. Each system is driven by locust, then by wrk running the same closed
// scenario at a fraction of locust's CPU per request; writes locust's CSV/HTML, wrk's totals,
// report.md and chart.svg per run. The study: docs/study.md.
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { renderChart, seriesFromHistory, type Series } from '../perf/chart.js';
import { createConfinement, throttlingSince, type Confinement } from '../perf/limits.js';
import { LOCUSTFILE, runLocust, type Progress } from '../perf/locust.js';
import { parseLocustCsv, type CsvRow } from '../perf/locust-csv.js';
import {
  parseStressOptions,
  STRESS_USAGE,
  type StressOptions,
  type SystemName,
} from '../perf/stress-options.js';
import { createUsageSampler } from '../perf/process-stats.js';
import {
  aggregated,
  renderReport,
  type ServiceResult,
  type SystemResult,
  type WrkRunResult,
} from '../perf/report.js';
import { createScratchDir, keepLogsAndRemove } from '../perf/scratch.js';
import { readServerLatency, type ServerLatency } from '../perf/server-latency.js';
import { checkStressPrerequisites } from '../perf/prerequisites.js';
import { startSystem, type SystemInstance } from '../perf/systems.js';
import { createDockerEngine, type DockerEngine } from '../perf/docker-engine.js';
import { mintTokens, writeTokenFile } from '../perf/tokens.js';
import { runWrkStudy } from '../perf/wrk-study.js';
import { formatCapacity, formatSearches, ladderMark } from '../perf/capacity-report.js';
import {
  capacityBracket,
  capacitySeries,
  CAPACITY_GOAL,
  CAPACITY_STEP_TRIALS,
  CAPACITY_STEPS,
  judgeStep,
  judgeTrials,
  needsAnotherTrial,
  nextStepUsers,
  QUICK_CAPACITY_STEPS,
  type CapacityStep,
} from '../perf/capacity.js';

const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));

function readCsv(path: string): CsvRow[] {
  try {
    return parseLocustCsv(readFileSync(path, 'utf8'));
  } catch {
    return [];
  }
}

function progressLine(name: string, duration: number, p: Progress): string {
  const p99 = p.p99Ms === undefined ? '—' : `${p.p99Ms} ms`;
  return `[${name}] ${Math.min(duration, Math.round(p.elapsedSeconds))}/${duration} s  users ${p.users}  ${p.rps.toFixed(0)} req/s  p99 ${p99}  failures ${p.failures}`;
}

function printProgress(line: string, lastPrinted: { at: number }): void {
  if (process.stderr.isTTY) process.stderr.write(`\r\x1b[2K${line}`);
  else if (Date.now() - lastPrinted.at >= 10_000) {
    process.stderr.write(`${line}\n`);
    lastPrinted.at = Date.now();
  }
}

/** Bytes written to the access log so far (0 before NGINX opens it). */
function logSize(path: string | undefined): number {
  try {
    return path === undefined ? 0 : statSync(path).size;
  } catch {
    return 0;
  }
}

/**
 * Measures the system's services while `drive` runs one generator: CPU and memory per service, CFS
 * throttling over this run only, and (ours) the gate's own latency from the access-log lines this
 * run wrote. NGINX flushes its buffered log every second, hence the pause before the end offset.
 */
async function whileDriving<T>(
  instance: SystemInstance,
  confinement: Confinement,
  drive: () => Promise<T>,
): Promise<{ value: T; services: ServiceResult[]; serverLatency?: ServerLatency[] }> {
  instance.syncAccessLog?.();
  const logStart = logSize(instance.accessLog);
  const sampler = createUsageSampler(new Map(instance.services.map((s) => [s.name, s.pids])));
  const throttledBefore = new Map(
    instance.services.map((s) => [s.name, confinement.cpuThrottling(s.name)]),
  );
  let value: T;
  try {
    value = await drive();
  } catch (error) {
    sampler.stop();
    throw error;
  }
  const usage = sampler.stop();
  const services: ServiceResult[] = usage.map((u) => {
    const info = instance.services.find((s) => s.name === u.name)!;
    const before = throttledBefore.get(u.name);
    const after = info.limited ? confinement.cpuThrottling(u.name) : undefined;
    return {
      ...u,
      limited: info.limited,
      cgroupPeakBytes: info.limited ? confinement.peakMemoryBytes(u.name) : undefined,
      throttling: before && after ? throttlingSince(before, after) : undefined,
    };
  });
  if (instance.accessLog === undefined) return { value, services };
  await sleep(1500);
  instance.syncAccessLog?.();
  const serverLatency = await readServerLatency(instance.accessLog, {
    start: logStart,
    end: logSize(instance.accessLog),
  });
  return { value, services, serverLatency };
}

/** What every system of one run is measured with. */
interface RunSetup {
  readonly options: StressOptions;
  readonly outDir: string;
  readonly confinement: Confinement;
  readonly cpuPlan: { services: string; load: string };
  readonly docker: DockerEngine | undefined;
}

/**
 * One fresh system for `use`: started on the run's engine, stopped and its logs kept whatever
 * happens; a failure is printed and handed to `failed` for the report.
 */
async function withSystem<T>(
  name: SystemName,
  { outDir, confinement, docker }: RunSetup,
  use: (instance: SystemInstance, dir: string, scratch: string) => Promise<T>,
  failed: (message: string) => T,
): Promise<T> {
  const dir = join(outDir, name);
  mkdirSync(dir, { recursive: true });
  const scratch = createScratchDir(name);
  let instance: SystemInstance | undefined;
  const start = () =>
    docker
      ? docker.startSystem(name, { dir: scratch })
      : startSystem(name, { dir: scratch, confinement });
  try {
    // A second start on fresh ports: a free port the kernel handed out can be taken by another
    // process's connection before NGINX binds it. A system that cannot start twice has failed.
    instance = await start().catch((error: unknown) => {
      process.stderr.write(`[${name}] start failed, once more: ${(error as Error).message}\n`);
      return start();
    });
    process.stderr.write(`[${name}] started at ${instance.baseUrl}\n`);
    return await use(instance, dir, scratch);
  } catch (error) {
    const message = (error as Error).message;
    process.stderr.write(`\n[${name}] failed: ${message}\n`);
    return failed(message);
  } finally {
    await instance?.stop();
    keepLogsAndRemove(scratch, join(dir, 'logs'));
  }
}

function measureSystem(
  name: SystemName,
  setup: RunSetup,
): Promise<{ result: SystemResult; series: Series }> {
  const { options, confinement, cpuPlan, docker } = setup;
  const files = { csv: `${name}/locust_stats.csv`, html: `${name}/locust.html` };
  return withSystem<{ result: SystemResult; series: Series }>(
    name,
    setup,
    async (instance, dir, scratch) => {
      process.stderr.write(`[${name}] minting ${options.users} tokens\n`);
      const tokenFile = join(scratch, 'tokens.txt');
      writeTokenFile(
        tokenFile,
        await mintTokens({ issuer: instance.issuer, count: options.users }),
      );
      const run: GeneratorRun = { instance, name, options, dir, tokenFile, confinement, cpuPlan };
      let locust: Awaited<ReturnType<typeof runLocustOn>> | undefined;
      let wrk: WrkRunResult | undefined;
      for (const generator of options.generators) {
        if (generator === 'locust') {
          locust = await runLocustOn(run, { scratch, docker });
        } else {
          wrk = await runWrkOn(run);
        }
      }
      await instance.stop();
      return {
        result: {
          name,
          stats: locust?.stats ?? [],
          services: locust?.services ?? [],
          files,
          loadGenerator: locust?.loadGenerator,
          serverLatency: locust?.serverLatency,
          wrk,
        },
        series: seriesFromHistory(name, readCsv(join(dir, 'locust_stats_history.csv'))),
      };
    },
    (message) => ({
      result: { name, stats: [], services: [], files, error: message },
      series: { name, points: [] },
    }),
  );
}

/** One system under one generator: what both generators' runs need. */
interface GeneratorRun {
  readonly instance: SystemInstance;
  readonly name: SystemName;
  readonly options: StressOptions;
  readonly dir: string;
  readonly tokenFile: string;
  readonly confinement: Confinement;
  readonly cpuPlan: { services: string; load: string };
}

async function runLocustOn(
  { instance, name, options, dir, tokenFile, confinement, cpuPlan }: GeneratorRun,
  where: { scratch: string; docker: DockerEngine | undefined },
) {
  const printed = { at: 0 };
  const measured = await whileDriving(instance, confinement, () =>
    runLocust(
      {
        host: instance.baseUrl,
        users: options.users,
        spawnRate: options.spawnRate,
        durationSeconds: options.durationSeconds,
        tokenFile,
        csvPrefix: join(dir, 'locust'),
        htmlFile: join(dir, 'locust.html'),
        logFile: join(dir, 'locust.log'),
        cpus: cpuPlan.load,
        container: where.docker && {
          name: `sg-stress-locust-${process.pid}-${name}`,
          mounts: [dirname(LOCUSTFILE), dir, where.scratch],
        },
      },
      (progress) => printProgress(progressLine(name, options.durationSeconds, progress), printed),
    ),
  );
  const stats = readCsv(join(dir, 'locust_stats.csv'));
  const total = aggregated(stats);
  process.stderr.write(
    `${process.stderr.isTTY ? '\n' : ''}[${name}] locust done: ${total?.['Request Count']} requests, ${total?.['Failure Count']} failures, ${Number(total?.['Requests/s']).toFixed(1)} req/s, p99 ${total?.['99%']} ms\n`,
  );
  return {
    stats,
    services: measured.services,
    loadGenerator: measured.value,
    serverLatency: measured.serverLatency,
  };
}

async function runWrkOn({
  instance,
  name,
  options,
  dir,
  tokenFile,
  confinement,
  cpuPlan,
}: GeneratorRun): Promise<WrkRunResult> {
  process.stderr.write(
    `[${name}] wrk: ${options.users} connections for ${options.durationSeconds} s\n`,
  );
  const measured = await whileDriving(instance, confinement, () =>
    runWrkStudy({
      host: instance.baseUrl,
      users: options.users,
      durationSeconds: options.durationSeconds,
      tokenFile,
      scriptFile: join(dir, 'wrk-study.lua'),
      cpus: cpuPlan.load,
      logFile: join(dir, 'wrk.log'),
    }),
  );
  const { result, loadGenerator } = measured.value;
  process.stderr.write(
    `[${name}] wrk done: ${result.requests} requests, ${result.failures} failures, ${result.rps.toFixed(1)} req/s, p99 ${result.latencyMs.p99.toFixed(1)} ms, wrk CPU ${((loadGenerator.cpuSeconds / Math.max(loadGenerator.wallSeconds, 1e-9)) * 100).toFixed(0)} %\n`,
  );
  return {
    result,
    services: measured.services,
    loadGenerator,
    serverLatency: measured.serverLatency,
  };
}

/**
 * `--find-capacity`: one fresh system, wrk at each step's number of users in turn (each user its
 * own token), until a step breaks the goal. Shared by both engines: only the start differs.
 */
function findCapacity(name: SystemName, setup: RunSetup): Promise<Omit<CapacityResult, 'name'>> {
  const { options, confinement, cpuPlan } = setup;
  const plan = options.quick ? QUICK_CAPACITY_STEPS : CAPACITY_STEPS;
  const trialsPerStep = CAPACITY_STEP_TRIALS[options.quick ? 'quick' : 'full'];
  const steps: CapacityStep[] = [];
  const loadBefore = loadavg()[0]!;
  const searched = () => ({ steps, load: [loadBefore, loadavg()[0]!] as const });
  return withSystem<Omit<CapacityResult, 'name'>>(
    name,
    setup,
    async (instance, dir, scratch) => {
      // Tokens are minted as the steps need them: the dev IdP signs ~100 a second, and a system
      // that breaks the goal early never needs the largest step's pool.
      const tokens: string[] = [];
      for (let users = nextStepUsers(plan, steps, options.resolution); users !== undefined;) {
        if (tokens.length < users) {
          process.stderr.write(`[${name}] minting ${users - tokens.length} more tokens\n`);
          tokens.push(
            ...(await mintTokens({ issuer: instance.issuer, count: users - tokens.length })),
          );
        }
        const tokenFile = join(scratch, `tokens-${users}.txt`);
        writeTokenFile(tokenFile, tokens.slice(0, users));
        const stepUsers = users;
        const trials: CapacityStep[] = [];
        do {
          const name = `${users}${trials.length === 0 ? '' : `-${trials.length + 1}`}`;
          const measured = await whileDriving(instance, confinement, () =>
            runWrkStudy({
              host: instance.baseUrl,
              users: stepUsers,
              durationSeconds: options.durationSeconds,
              tokenFile,
              scriptFile: join(dir, `wrk-${name}.lua`),
              cpus: cpuPlan.load,
              logFile: join(dir, `wrk-${name}.log`),
            }),
          );
          trials.push(
            judgeStep(users, measured.value.result, measured.value.loadGenerator, measured),
          );
        } while (needsAnotherTrial(trials, trialsPerStep));
        const step = judgeTrials(trials, trialsPerStep);
        steps.push(step);
        const costs = step.services
          .map((s) => `${s.name} ${s.cpuUsPerRequest.toFixed(0)} µs`)
          .join(' + ');
        process.stderr.write(
          `[${name}] ${users} users${ladderMark(plan, users)}: offered ${step.offeredRps.toFixed(0)} req/s, served ${step.servedRps.toFixed(0)}, ${step.failures} failures, p99 ${step.p99Ms.toFixed(1)} ms, ${step.generatorSaturated ? 'unresolved, wrk saturated,' : step.heldGoal ? 'held' : 'broken'} in ${step.trials?.held}/${trials.length} trials, wrk CPU ${((step.generatorCpuShare ?? NaN) * 100).toFixed(0)} %${step.generatorSaturated ? ' (saturated)' : ''}; ${costs} per request\n`,
        );
        users = nextStepUsers(plan, steps, options.resolution);
      }
      const { held, broke } = capacityBracket(steps);
      if (broke?.generatorSaturated)
        process.stderr.write(
          `[${name}] stopped at ${broke.users} users, where wrk saturated its core: the capacity is at least ${held?.users ?? 0} users and unresolved above\n`,
        );
      return searched();
    },
    (message) => ({ ...searched(), error: message }),
  );
}

/** The capacity report: per system its steps and capacity, and the chart of p99 against load. */
type CapacityResult = {
  name: SystemName;
  steps: CapacityStep[];
  /** The 1-minute load average when the system's search started and when it ended. */
  load: readonly [number, number];
  error?: string;
};

function writeCapacityReport(
  outDir: string,
  options: StressOptions,
  runs: readonly CapacityResult[][],
  support: Confinement['support'],
  startedAt: Date,
): string {
  const results = runs.at(-1) ?? [];
  const chartFile = 'capacity.svg';
  writeFileSync(
    join(outDir, chartFile),
    renderChart(
      results.map((r) => capacitySeries(r.name, r.steps)),
      `profile ${options.profile.name}: served requests/s and p99 against offered load`,
      'req/s offered',
    ),
  );
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  const report = [
    `# Capacity at p99 ≤ ${CAPACITY_GOAL.p99Ms} ms and 0 failures`,
    '',
    `\`npm run stress -- ${process.argv.slice(2).join(' ')}\`, started ${startedAt.toISOString()}, finished ${new Date().toISOString()}, engine ${options.engine}, ` +
      `profile ${options.profile.name}, ${options.durationSeconds} s per step, fine steps to ${Number.isFinite(options.resolution) ? `${(options.resolution * 100).toFixed(0)} %` : 'none'}; wrk, one connection per user with think ` +
      `time uniform 0–1 s, /hello:/secret = 1:2, a token per user. ${cpus().length} × ${cpu}, Node ${process.version}.`,
    ...(support.mode === 'pin' ? ['', `Pinning only, no limits: ${support.reason}.`] : []),
    '',
    `![p99 against offered load](${chartFile})`,
    '',
    ...(runs.length > 1 ? [formatSearches(options.systems, runs, options.resolution), ''] : []),
    ...runs.flatMap((run, i) => [
      ...(runs.length > 1 ? [`## Run ${i + 1}`, ''] : []),
      ...run.flatMap((r) => [
        formatCapacity(r.name, r.steps, {
          plan: options.quick ? QUICK_CAPACITY_STEPS : CAPACITY_STEPS,
          resolution: options.resolution,
        }),
        '',
        `Load average (1 min) at the start of this search: ${r.load[0].toFixed(2)}, at its end: ${r.load[1].toFixed(2)}.`,
        ...(r.error ? ['', `Stopped by an error: ${r.error}`] : []),
        '',
      ]),
    ]),
  ].join('\n');
  const file = join(outDir, 'report.md');
  writeFileSync(file, report);
  return file;
}

async function main(): Promise<number> {
  let options: StressOptions;
  try {
    options = parseStressOptions(process.argv.slice(2));
  } catch (error) {
    console.error(`${(error as Error).message}\n\n${STRESS_USAGE}`);
    return 2;
  }
  if (options.help) {
    console.log(STRESS_USAGE);
    return 0;
  }
  const missing = options.engine === 'docker' ? undefined : checkStressPrerequisites();
  if (missing) {
    console.error(missing);
    return 2;
  }

  const startedAt = new Date();
  const outDir = options.outDir ?? join(RESULTS, startedAt.toISOString().replace(/[:.]/g, '-'));
  mkdirSync(outDir, { recursive: true });
  // Two cores or more: the gate's services on the second, locust on the first.
  const cpuPlan = cpus().length >= 2 ? { services: '1', load: '0' } : { services: '0', load: '0' };
  const docker =
    options.engine === 'docker' ? createDockerEngine(options.profile, cpuPlan.services) : undefined;
  const confinement =
    docker?.confinement ?? createConfinement({ profile: options.profile, cpus: cpuPlan.services });
  if (docker) {
    process.stderr.write('building the images (docker-compose-stress.yaml)\n');
    await docker.build(options.systems);
  }
  const setup: RunSetup = { options, outDir, confinement, cpuPlan, docker };
  if (confinement.support.mode === 'pin') {
    process.stderr.write(`note: pinning only, no limits: ${confinement.support.reason}\n`);
  }

  if (options.findCapacity) {
    const runs: CapacityResult[][] = [];
    try {
      for (let run = 1; run <= options.runs; run++) {
        if (options.runs > 1) process.stderr.write(`search ${run} of ${options.runs}\n`);
        const found: CapacityResult[] = [];
        for (const name of options.systems)
          found.push({ name, ...(await findCapacity(name, setup)) });
        runs.push(found);
      }
    } finally {
      await confinement.release();
    }
    const file = writeCapacityReport(outDir, options, runs, confinement.support, startedAt);
    console.log(`report: ${file}`);
    return runs.flat().some((r) => r.error) ? 1 : 0;
  }

  const results: SystemResult[] = [];
  const series: Series[] = [];
  let interrupted = false;
  const onInterrupt = () => {
    interrupted = true;
  };
  // SIGTERM too: a killed runner must still stop its services and remove its cgroups.
  process.on('SIGINT', onInterrupt);
  process.on('SIGTERM', onInterrupt);
  try {
    for (const name of options.systems) {
      if (interrupted) break;
      const measured = await measureSystem(name, setup);
      results.push(measured.result);
      series.push(measured.series);
    }
  } finally {
    process.off('SIGINT', onInterrupt);
    process.off('SIGTERM', onInterrupt);
    await confinement.release();
  }

  const chartFile = 'chart.svg';
  writeFileSync(
    join(outDir, chartFile),
    renderChart(
      series,
      `${options.users} users, profile ${options.profile.name}: throughput and p99`,
    ),
  );
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  const report = renderReport(
    {
      startedAt,
      engine: options.engine,
      generators: options.generators,
      command: `npm run stress -- ${process.argv.slice(2).join(' ')}`.trim(),
      profile: options.profile,
      users: options.users,
      spawnRate: options.spawnRate,
      durationSeconds: options.durationSeconds,
      support: confinement.support,
      serviceCpus: cpuPlan.services,
      loadCpus: cpuPlan.load,
      machine: `${cpus().length} × ${cpu}, Linux ${release()}, Node ${process.version}`,
      chartFile,
    },
    results,
  );
  writeFileSync(join(outDir, 'report.md'), report);
  console.log(`report: ${join(outDir, 'report.md')}`);
  return results.some((r) => r.error) ? 1 : 0;
}

process.exitCode = await main();

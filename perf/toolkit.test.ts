// The stress and bench harness pieces without load: options, limits fallback, CSV → report and
// chart, wrk output, bench goals. The report is rendered from a locust CSV recorded on a real run.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { evaluateBenchGoals, ROW_NAMES, withRatios } from './bench-goals.js';
import { parseBenchOptions } from './bench-options.js';
import { parseWrkOutput } from './wrk.js';
import { renderChart, seriesFromHistory } from './chart.js';
import {
  createConfinement,
  detectLimitSupport,
  parseCpuStat,
  PROFILES,
  throttlingSince,
  type LimitProbe,
  type ResourceProfile,
} from './limits.js';
import { locustArgs } from './locust.js';
import { parseStudyOutput, runWrkStudy, studyArgs, studyScript } from './wrk-study.js';
import { parseCsvRecords, parseLocustCsv } from './locust-csv.js';
import { parseDuration, parseStressOptions } from './stress-options.js';
import { parseHwm, parseStat, runQueueWaitSeconds } from './process-stats.js';
import { isSaturated, judgedRun, parseGenerators } from './generators.js';
import {
  bottleneckLine,
  judgedLine,
  locustFigures,
  renderReport,
  stressGoals,
  studyTable,
  type SystemResult,
} from './report.js';
import { recordLine, summarize } from './server-latency.js';

const fixture = (name: string) =>
  readFileSync(new URL(`../stresstest/fixtures/${name}`, import.meta.url), 'utf8');

describe('stress options', () => {
  it('defaults to the study: all systems, profile study, 2500 users at 50/s for 5 minutes', () => {
    const options = parseStressOptions([]);
    expect(options.systems).toEqual(['ours', 'study-njs', 'study-node', 'njs-verify']);
    expect(options.profile).toBe(PROFILES.study);
    expect([options.users, options.spawnRate, options.durationSeconds]).toEqual([2500, 50, 300]);
  });

  it('keeps the quota a share of a shorter CFS period when --cfs-period asks, on processes only', () => {
    const { profile } = parseStressOptions(['--profile', 'tight', '--cfs-period', '10']);
    expect(profile).toEqual({ ...PROFILES.tight, cfsPeriodUs: 10_000 });
    expect(PROFILES.tight.cfsPeriodUs).toBe(100_000);
    expect(() => parseStressOptions(['--cfs-period', '0'])).toThrow(
      '"--cfs-period" must be a whole number of milliseconds from 1 to 1000',
    );
    expect(() => parseStressOptions(['--engine', 'docker', '--cfs-period', '10'])).toThrow(
      '"--cfs-period" needs the process engine',
    );
  });

  it('drives each system with locust, then wrk, unless --generators names fewer', () => {
    expect(parseStressOptions([]).generators).toEqual(['locust', 'wrk']);
    expect(parseStressOptions(['--generators', 'wrk']).generators).toEqual(['wrk']);
    expect(parseGenerators('wrk, locust,wrk')).toEqual(['wrk', 'locust']);
    expect(() => parseStressOptions(['--generators', 'ab,wrk'])).toThrow(
      'invalid options: unknown generator "ab" (known: locust, wrk)',
    );
    expect(() => parseStressOptions(['--generators', ','])).toThrow(
      '"--generators" lists no generator',
    );
  });

  it('--quick runs 60 s per system unless --duration says otherwise', () => {
    expect(parseStressOptions(['--quick']).durationSeconds).toBe(60);
    expect(parseStressOptions(['--quick', '--duration', '90s']).durationSeconds).toBe(90);
  });

  it('reads --systems, --profile and --users, also in --name=value form', () => {
    const options = parseStressOptions([
      '--systems=ours,njs-verify',
      '--profile',
      'tight',
      '--users=200',
    ]);
    expect(options.systems).toEqual(['ours', 'njs-verify']);
    expect(options.profile).toBe(PROFILES.tight);
    expect(options.users).toBe(200);
  });

  it('runs local processes unless --engine docker asks for docker-compose-stress.yaml', () => {
    expect(parseStressOptions([]).engine).toBe('process');
    expect(parseStressOptions(['--engine', 'docker']).engine).toBe('docker');
    expect(() => parseStressOptions(['--engine=podman'])).toThrow(
      new TypeError('invalid options: unknown engine "podman" (known: process, docker)'),
    );
  });

  it('reports every bad option in one TypeError', () => {
    expect(() =>
      parseStressOptions(['--systems', 'ours,bff', '--profile', 'huge', '--users', '0', '--fast']),
    ).toThrow(
      new TypeError(
        'invalid options: unknown option "--fast"; unknown system "bff" (known: ours, study-njs, study-node, njs-verify); unknown profile "huge" (known: study, tight); "--users" must be a positive integer',
      ),
    );
  });

  it.each([
    ['90', 90],
    ['90s', 90],
    ['5m', 300],
    ['1h', 3600],
    ['0', undefined],
    ['-5', undefined],
    ['5 minutes', undefined],
  ])('parses the duration %s as %s seconds', (text, seconds) => {
    expect(parseDuration(text)).toBe(seconds);
  });
});

describe('limits: cgroup v1 or pinning only', () => {
  const root = '/cg';
  const everything: LimitProbe = { isRoot: true, exists: () => true, writable: () => true };

  it('uses cgroups when root can write the cpu, memory and cpuset controllers', () => {
    expect(detectLimitSupport(root, everything)).toEqual({ mode: 'cgroup' });
  });

  it.each([
    [{ ...everything, isRoot: false }, 'not running as root, cgroups cannot be written'],
    [
      { ...everything, exists: (p: string) => !p.includes('/memory/') },
      'no cgroup v1 "memory" controller at /cg/memory',
    ],
    [{ ...everything, writable: (p: string) => p !== '/cg/cpuset' }, '/cg/cpuset is not writable'],
  ])('falls back to pinning and says why (%#)', (probe, reason) => {
    expect(detectLimitSupport(root, probe)).toEqual({ mode: 'pin', reason });
  });

  it('in pin mode wraps a command in taskset on the service core', () => {
    const confinement = createConfinement({
      profile: PROFILES.study,
      cpus: '1',
      support: { mode: 'pin', reason: 'test' },
    });
    expect(confinement.wrap('gate', { command: 'nginx', args: ['-p', '/x'] }, true)).toEqual({
      command: 'taskset',
      args: ['-c', '1', 'nginx', '-p', '/x'],
    });
  });

  it('reads CFS throttling from cpu.stat and measures it between two readings', () => {
    const before = parseCpuStat('nr_periods 100\nnr_throttled 10\nthrottled_time 500000000\n');
    const after = parseCpuStat('nr_periods 400\nnr_throttled 70\nthrottled_time 3500000000\n');
    expect(before).toEqual({ periods: 100, throttledPeriods: 10, throttledSeconds: 0.5 });
    expect(throttlingSince(before!, after!)).toEqual({
      periods: 300,
      throttledPeriods: 60,
      throttledSeconds: 3,
    });
    expect(parseCpuStat('nr_periods 1\n')).toBeUndefined();
  });

  it.skipIf(detectLimitSupport('/sys/fs/cgroup').mode !== 'cgroup')(
    'in cgroup mode starts a process inside its group with the quota, its period and the memory limit, and removes the group',
    async () => {
      const confinement = createConfinement({
        profile: { ...PROFILES.tight, cfsPeriodUs: 10_000 },
        cpus: '0',
        runId: `test-${process.pid}`,
      });
      const wrapped = confinement.wrap('sleeper', { command: 'sleep', args: ['30'] }, true);
      const child = spawn(wrapped.command, [...wrapped.args], { stdio: 'ignore' });
      const exited = new Promise((resolve) => child.once('exit', resolve));
      const group = `secret-gate-stress-test-${process.pid}-sleeper`;
      try {
        let cgroups = '';
        // The wrapper joins cpu, memory, then cpuset: wait for the last one.
        for (let i = 0; i < 50 && !cgroups.includes(`:cpuset:/${group}`); i++) {
          await new Promise((r) => setTimeout(r, 20));
          cgroups = readFileSync(`/proc/${child.pid}/cgroup`, 'utf8');
        }
        expect(cgroups).toContain(`:cpu:/${group}`);
        expect(cgroups).toContain(`:memory:/${group}`);
        const cpuFile = (name: string) =>
          readFileSync(`/sys/fs/cgroup/cpu/${group}/${name}`, 'utf8').trim();
        expect([cpuFile('cpu.cfs_period_us'), cpuFile('cpu.cfs_quota_us')]).toEqual([
          '10000',
          '2500',
        ]);
        expect(
          readFileSync(`/sys/fs/cgroup/memory/${group}/memory.limit_in_bytes`, 'utf8').trim(),
        ).toBe(String(64 * 1024 * 1024));
      } finally {
        child.kill('SIGKILL');
        await exited;
        await confinement.release();
      }
      expect(existsSync(`/sys/fs/cgroup/cpu/${group}`)).toBe(false);
      expect(existsSync(`/sys/fs/cgroup/memory/${group}`)).toBe(false);
      expect(existsSync(`/sys/fs/cgroup/cpuset/${group}`)).toBe(false);
    },
  );
});

describe('locust CSV and the report', () => {
  const stats = parseLocustCsv(fixture('study-njs_stats.csv'));
  const recorded: SystemResult = {
    name: 'study-njs',
    stats,
    services: [],
    files: { csv: 'study-njs/locust_stats.csv', html: 'study-njs/locust.html' },
  };

  it('reads quoted CSV fields with commas and doubled quotes', () => {
    expect(parseCsvRecords('a,b\n"x, y","say ""hi"""\n')).toEqual([
      ['a', 'b'],
      ['x, y', 'say "hi"'],
    ]);
  });

  it('renders the study table with its column names from a recorded run', () => {
    const table = studyTable(stats).split('\n');
    expect(table[0]).toBe(
      '| Type | Name | # Requests | # Fails | Median (ms) | 95%ile (ms) | 99%ile (ms) | Average (ms) | Min (ms) | Max (ms) | Average size (bytes) | RPS | Failures/s |',
    );
    expect(table[2]).toBe(
      '| GET | /hello | 363 | 0 | 2 | 28 | 68 | 7.06 | 0 | 93 | 0.00 | 59.6 | 0.0 |',
    );
    expect(table[4]).toBe(
      '|  | Aggregated | 1,130 | 0 | 4 | 31 | 87 | 9.08 | 0 | 180 | 23.76 | 185.4 | 0.0 |',
    );
  });

  it("judges the goals: throughput only with the study's 2500 users, p99 per profile", () => {
    const run = locustFigures({ ...recorded, loadGenerator: { cpuSeconds: 4, wallSeconds: 8 } })!;
    const verdicts = (profile: ResourceProfile, users: number) =>
      stressGoals(profile, users, [run]).goals.map((g) => g.verdict);
    expect(verdicts(PROFILES.study, 100)).toEqual(['met', 'met', 'n/a']);
    expect(verdicts(PROFILES.study, 2500)).toEqual(['met', 'met', 'missed']);
    expect(stressGoals(PROFILES.tight, 2500, [run]).goals.map((g) => g.goal)).toEqual([
      '0 failures',
      'p99 ≤ 250 ms',
    ]);
  });

  it('judges latency on the generator that kept up, flags the saturated one, counts failures on both', () => {
    const figures = (
      generator: 'locust' | 'wrk',
      p99Ms: number,
      cpuShare: number | undefined,
      failures = 0,
      waitShare: number | undefined = 0,
    ) => ({
      generator,
      requests: 1000,
      failures,
      rps: 2500,
      p50Ms: 1,
      p95Ms: 2,
      p99Ms,
      maxMs: 900,
      cpuShare,
      waitShare,
    });
    const saturatedLocust = figures('locust', 400, 0.93);
    const wrk = figures('wrk', 40, 0.2);
    const { goals, judged } = stressGoals(PROFILES.study, 2500, [saturatedLocust, wrk]);
    expect(judged?.generator).toBe('wrk');
    expect(goals.map((g) => [g.goal, ...g.values, g.verdict])).toEqual([
      ['0 failures', '0', '0', 'met'],
      ['p99 ≤ 100 ms', '400 ms (saturated)', '40 ms', 'met'],
      ["requests/s ≥ 10× the study's 206.2 (2,062)", '2500.0 (saturated)', '2500.0', 'met'],
    ]);
    expect(judgedLine([saturatedLocust, wrk], '0')).toBe(
      'Latency and throughput judged on the wrk run, whose generator kept up (CPU 0 share: locust 93 % + 0 % waiting, saturated; wrk 20 % + 0 % waiting).',
    );
    // Both kept up: the one with more headroom; a failure on either run misses the goal.
    expect(judgedRun([figures('locust', 90, 0.6), figures('wrk', 80, 0.3)])?.generator).toBe('wrk');
    expect(
      stressGoals(PROFILES.tight, 2500, [figures('locust', 90, 0.6, 3), wrk]).goals[0]?.verdict,
    ).toBe('missed');
    // Nobody kept up (or nobody was sampled): latency is not judged at all.
    const blind = stressGoals(PROFILES.tight, 2500, [
      saturatedLocust,
      figures('wrk', 40, undefined),
    ]);
    expect(blind.judged).toBeUndefined();
    expect(blind.goals[1]?.verdict).toBe('n/a');
    expect(isSaturated({ cpuShare: 0.9, waitShare: undefined })).toBe(true);
    expect(isSaturated({ cpuShare: 0.89, waitShare: undefined })).toBe(false);
    // Starved by other work on its core: little CPU time, but it needed the whole core.
    const starved = figures('locust', 4900, 0.23, 0, 0.79);
    expect(isSaturated(starved)).toBe(true);
    expect(judgedRun([starved, figures('wrk', 60, 0.18, 0, 0.3)])?.generator).toBe('wrk');
    expect(judgedLine([starved], '0')).toBe(
      'Latency and throughput not judged: every load generator was saturated (needed ≥ 90 % of CPU 0, used or waited for: locust 23 % + 79 % waiting, saturated), so their latencies are partly their own queueing.',
    );
    expect(
      bottleneckLine({
        ...recorded,
        loadGenerator: { cpuSeconds: 23, wallSeconds: 100, waitSeconds: 79 },
      }),
    ).toBe(
      'Bottleneck: the load generator — locust used 23 % of its core (and waited for it another 79 %: the core is shared with other work), so much of the latency above is queueing in locust, not in the gate.',
    );
  });

  it("writes a report with the side-by-side summary, the study's figures, resources and a note when only pinned", () => {
    const result: SystemResult = {
      name: 'study-njs',
      stats,
      services: [
        {
          name: 'study-njs',
          limited: true,
          peakRssBytes: 20 * 1024 * 1024,
          cpuSeconds: 1.5,
          waitSeconds: 0.2,
          wallSeconds: 8,
          cgroupPeakBytes: undefined,
          throttling: { periods: 80, throttledPeriods: 20, throttledSeconds: 0.75 },
        },
      ],
      files: { csv: 'study-njs/locust_stats.csv', html: 'study-njs/locust.html' },
      loadGenerator: { cpuSeconds: 7.6, wallSeconds: 8 },
      serverLatency: [{ path: '/secret', count: 750, p50Ms: 0, p99Ms: 3, maxMs: 41 }],
    };
    const report = renderReport(
      {
        startedAt: new Date('2026-01-01T00:00:00Z'),
        generators: ['locust'],
        command: 'npm run stress -- --quick',
        profile: PROFILES.study,
        users: 100,
        spawnRate: 50,
        durationSeconds: 8,
        support: { mode: 'pin', reason: 'not running as root, cgroups cannot be written' },
        serviceCpus: '1',
        loadCpus: '0',
        machine: 'test',
        chartFile: 'chart.svg',
      },
      [result, { ...result, name: 'ours', stats: [], services: [], error: 'nginx not found' }],
    );
    expect(report).toContain(
      '**pinning only, no CPU or memory limits** (not running as root, cgroups cannot be written)',
    );
    expect(report).toContain(
      '| study-njs | 1,130 | 0 (0.00 %) | 185.4 | 4 | 31 | 87 | 180 | 20.0 | 1.5 |',
    );
    expect(report).toContain(
      '| study NGINX + njs (published) | 97,798 | 1,419 (1.45 %) | 206.2 | 2,600 | 7,000 | 27,000 | 223,673 | — | — |',
    );
    expect(report).toContain('| study Node.js (published) | 83,622 | 2,758 (3.30 %) | 185.2 |');
    // 1.5 CPU seconds over the 1,130 requests of the fixture.
    expect(report).toContain(
      '| study-njs | pinned to CPU 1 | 20.0 | 1.5 | 1,327 | 25 % of 80 periods, 0.8 s | — |',
    );
    expect(report).toContain(
      'Inside the gate (NGINX `$request_time` from its access log, 1 ms resolution): /secret p50 0 ms, p99 3 ms, max 41 ms (750 requests).',
    );
    expect(report).toContain(
      'Load generator: locust used 95 % of CPU 0 once every user had spawned: saturated, so its own queueing is part of the latencies above.',
    );
    expect(report).toContain(
      'Bottleneck: the load generator — no gate service was throttled in more than 25 % of its periods, while locust used 95 % of its core',
    );
    expect(report).toContain('## ours\n\nNot measured: nginx not found');
    // A gate service throttled in most periods is named as the bottleneck, load generator or not.
    const gateBound = {
      ...result,
      services: [
        {
          ...result.services[0]!,
          throttling: { periods: 100, throttledPeriods: 85, throttledSeconds: 30 },
        },
      ],
    };
    expect(bottleneckLine(gateBound)).toBe(
      'Bottleneck: the CPU quota. study-njs needed 1,327 µs of CPU per request and was throttled in 85 % of its periods, so requests waited for the next one.',
    );
    expect(bottleneckLine({ ...result, loadGenerator: { cpuSeconds: 4, wallSeconds: 8 } })).toBe(
      '',
    );
    expect(report).toContain('![throughput and p99 over time](chart.svg)');
  });

  it('draws throughput and p99 over time for every system as one SVG', () => {
    const series = seriesFromHistory(
      'study-njs',
      parseLocustCsv(fixture('study-njs_stats_history.csv')),
    );
    expect(series.points[0]).toEqual({ t: 0, rps: 0, p99Ms: undefined });
    expect(series.points.length).toBeGreaterThan(3);
    const svg = renderChart([series, { name: 'ours', points: [] }], 'test <run>');
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg).toContain('test &lt;run&gt;');
    expect(svg.match(/<polyline/g)?.length).toBe(2);
    expect(svg).toContain('>study-njs</text>');
    expect(svg).toContain('>ours</text>');
  });

  it('runs locust headless, pinned, with CSV history and an HTML report', () => {
    const args = locustArgs({
      host: 'http://127.0.0.1:1',
      users: 2500,
      spawnRate: 50,
      durationSeconds: 300,
      tokenFile: '/t',
      csvPrefix: '/r/locust',
      htmlFile: '/r/locust.html',
      logFile: '/r/locust.log',
      cpus: '0',
    });
    expect(args.slice(0, 4)).toEqual(['-c', '0', '/usr/bin/python3', '-m']);
    for (const flag of ['--headless', '--csv-full-history', '--only-summary'])
      expect(args).toContain(flag);
    expect(args.join(' ')).toContain('--users 2500 --spawn-rate 50 --run-time 300s');
  });
});

describe('the study scenario in wrk', () => {
  const run = {
    host: 'http://127.0.0.1:8080',
    users: 2500,
    durationSeconds: 300,
    tokenFile: '/tmp/x/tokens "1".txt',
    scriptFile: '/r/wrk-study.lua',
    cpus: '0',
    logFile: '/r/wrk.log',
  };

  it('holds one connection per user on one pinned thread, with a timeout as generous as locust’s', () => {
    expect(studyArgs(run)).toEqual([
      '-c',
      '0',
      'wrk',
      '-t1',
      '-c2500',
      '-d300s',
      '--timeout',
      '60s',
      '-s',
      '/r/wrk-study.lua',
      'http://127.0.0.1:8080',
    ]);
  });

  it('gives every request a 0–1 s think time and sends /hello and /secret 1:2, tokens round-robin', () => {
    const script = studyScript(run.tokenFile);
    expect(script).toContain('for line in io.lines("/tmp/x/tokens \\"1\\".txt") do');
    expect(script).toMatch(/function delay\(\)\n {2}return math\.random\(0, 1000\)\nend/);
    expect(script).toContain('if math.random(3) == 1 then');
    expect(script).toContain(
      'return wrk.format("GET", "/secret", { ["Authorization"] = tokens[next_token] })',
    );
    expect(script).toContain('next_token = next_token % #tokens + 1');
    // No response() hook: wrk would then parse every body, costing CPU per request.
    expect(script).not.toContain('function response');
    expect(studyScript('/t', 250)).toContain('math.random(0, 250)');
  });

  it.skipIf(spawnSync('sh', ['-c', 'command -v wrk']).status !== 0)(
    'drives a real server as a closed model: think time between requests, 1:2 paths, every token used',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'wrk-study-'));
      const tokens = ['tok-a', 'tok-b', 'tok-c'];
      writeFileSync(join(dir, 'tokens.txt'), `${tokens.join('\n')}\n`);
      const seen = { hello: 0, secret: 0, other: 0, tokens: new Map<string, number>() };
      const server = createServer((req, res) => {
        if (req.url === '/hello') seen.hello++;
        else if (req.url === '/secret') {
          seen.secret++;
          const token = String(req.headers.authorization).replace('Bearer ', '');
          seen.tokens.set(token, (seen.tokens.get(token) ?? 0) + 1);
        } else seen.other++;
        res.end('ok');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as AddressInfo;
      try {
        const { result, loadGenerator } = await runWrkStudy({
          host: `http://127.0.0.1:${port}`,
          users: 10,
          durationSeconds: 3,
          tokenFile: join(dir, 'tokens.txt'),
          scriptFile: join(dir, 'study.lua'),
          cpus: '0',
          logFile: join(dir, 'wrk.log'),
          maxThinkMs: 100,
        });
        expect(seen.other).toBe(0);
        expect(result.failures).toBe(0);
        // wrk counts completed answers; the server may have seen a few still in flight at the end.
        expect(seen.hello + seen.secret).toBeGreaterThanOrEqual(result.requests);
        expect(result.helloRequests + result.secretRequests).toBeGreaterThanOrEqual(
          result.requests,
        );
        // 10 users thinking 50 ms on average make at most ~200 requests/s; an open loop would make thousands.
        expect(result.requests).toBeGreaterThan(100);
        expect(result.requests).toBeLessThan(10 * 3 * (1000 / 40));
        const secretShare = seen.secret / (seen.hello + seen.secret);
        expect(secretShare).toBeGreaterThan(0.55);
        expect(secretShare).toBeLessThan(0.78);
        expect([...seen.tokens.keys()].sort()).toEqual(tokens);
        const counts = [...seen.tokens.values()];
        expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
        expect(loadGenerator.wallSeconds).toBeGreaterThanOrEqual(0);
      } finally {
        server.close();
        rmSync(dir, { recursive: true, force: true });
      }
    },
    20_000,
  );

  it('reads the totals line: per-path counts, socket and status failures, latency in ms', () => {
    const result = parseStudyOutput(
      'Running 5m test @ http://127.0.0.1:8080\n  1 threads and 2500 connections\n' +
        '{"requests":1500000,"hello":500100,"secret":999900,"duration_us":300000000,"socket_errors":3,"status_errors":2,' +
        '"p50_us":900,"p90_us":2100,"p95_us":3200,"p99_us":8700,"max_us":250000,"mean_us":1234.5}\n',
    );
    expect(result).toEqual({
      requests: 1_500_000,
      helloRequests: 500_100,
      secretRequests: 999_900,
      durationSeconds: 300,
      rps: 5000,
      socketErrors: 3,
      statusErrors: 2,
      failures: 5,
      latencyMs: { p50: 0.9, p90: 2.1, p95: 3.2, p99: 8.7, max: 250, mean: 1.2345 },
    });
    expect(() => parseStudyOutput('unable to connect')).toThrow('wrk printed no totals');
  });
});

describe('latency inside the gate', () => {
  it('reads p50, p99 and max per path from the JSON access log, skipping foreign lines', () => {
    const histograms = new Map();
    const line = (path: string, seconds: number) =>
      recordLine(histograms, JSON.stringify({ path, status: 200, request_time: seconds }));
    for (let i = 0; i < 98; i++) line('/secret', 0.001);
    line('/secret', 0.04);
    line('/secret', 0.25);
    line('/hello', 0);
    recordLine(histograms, 'not json');
    recordLine(histograms, '{"path":"/secret"}');
    expect(summarize(histograms)).toEqual([
      { path: '/secret', count: 100, p50Ms: 1, p99Ms: 40, maxMs: 250 },
      { path: '/hello', count: 1, p50Ms: 0, p99Ms: 0, maxMs: 0 },
    ]);
  });
});

describe('process stats', () => {
  it('reads ppid and CPU ticks from /proc/PID/stat even when the name holds spaces and parens', () => {
    const stat =
      '123 (nginx: worker (x)) S 100 123 123 0 -1 4194560 10 0 0 0 250 50 0 0 20 0 1 0 5 0';
    expect(parseStat(stat)).toEqual({ ppid: 100, cpuTicks: 300 });
  });

  it('reads how long a process waited runnable for a CPU, summed over its threads', () => {
    const waited = runQueueWaitSeconds(process.pid);
    expect(waited).toBeGreaterThanOrEqual(0);
    expect(Number.isFinite(waited)).toBe(true);
    expect(runQueueWaitSeconds(2 ** 30)).toBe(0);
  });

  it('reads the peak resident set from /proc/PID/status', () => {
    expect(parseHwm('Name:\tnode\nVmHWM:\t   51200 kB\nVmRSS:\t 40000 kB\n')).toBe(51200 * 1024);
    expect(parseHwm('Name:\tkthreadd\n')).toBe(0);
  });
});

describe('bench pieces', () => {
  it('reads the totals line wrk.lua prints', () => {
    const out =
      'Running 3s test\n  1 threads\n\n{"requests":30000,"duration_us":3000000,"socket_errors":1,"status_errors":2,"p50_us":600,"p99_us":2500}\n';
    expect(parseWrkOutput(out)).toEqual({
      requests: 30000,
      rps: 10000,
      p50Ms: 0.6,
      p99Ms: 2.5,
      errors: 3,
    });
    expect(() => parseWrkOutput('unable to connect')).toThrow('wrk printed no totals');
  });

  it('parses --duration, --connections and --json', () => {
    expect(parseBenchOptions(['--duration', '3', '--json'])).toEqual({
      durationSeconds: 3,
      connections: 50,
      json: true,
      counts: true,
      help: false,
    });
    expect(parseBenchOptions(['--no-counts']).counts).toBe(false);
    expect(() => parseBenchOptions(['--duration', 'x', '--nope'])).toThrow(
      'invalid options: "--duration" must be a positive integer; unknown option "--nope"',
    );
  });

  it('computes ratios to the ceiling and judges every goal of the issue', () => {
    const row = (name: string, rps: number) => ({ name, rps, p50_ms: 1, p99_ms: 2 });
    const rows = withRatios([
      row(ROW_NAMES.ceiling, 60000),
      row(ROW_NAMES.cached, 24000),
      row(ROW_NAMES.distinct, 5000),
      {
        ...row(ROW_NAMES.cachedDpop, 3000),
        cpu_us: { nginx: 100, verifier: 150 },
        crypto_floor_us: 110,
      },
      row(ROW_NAMES.studyNjs, 8500),
      row(ROW_NAMES.studyNode, 5000),
      row(ROW_NAMES.njsVerify, 5000),
    ]);
    expect(rows[1]?.ratio).toBe(0.4);
    expect(evaluateBenchGoals(rows).map((g) => [g.goal, g.met])).toEqual([
      ['/secret cached ≥ 0.4× the ceiling', true],
      ['/secret all-distinct ≥ 0.15× the ceiling', false],
      ['/secret cached ≥ 3× study-njs', false],
      ['/secret cached ≥ 4× njs-verify', true],
      [
        "/secret cached DPoP: verifier CPU per request ≤ the proof's bare ES256 verify + 40 µs (150 µs)",
        true,
      ],
    ]);
    const slowProof = withRatios([
      row(ROW_NAMES.ceiling, 60000),
      { ...row(ROW_NAMES.cachedDpop, 3000), cpu_us: { verifier: 151 }, crypto_floor_us: 110 },
    ]);
    expect(evaluateBenchGoals(slowProof).at(-1)?.met).toBe(false);
    // A run without the DPoP row cannot meet its goal.
    expect(evaluateBenchGoals(rows.slice(0, 3)).at(-1)?.met).toBe(false);
  });
});

describe('docker-compose-stress.yaml', () => {
  it('limits every gate container like the study, builds or makes every image, and loads only 127.0.0.1', async () => {
    const { parse } = await import('yaml');
    const compose = parse(
      readFileSync(new URL('../docker-compose-stress.yaml', import.meta.url), 'utf8'),
      { merge: true },
    ) as {
      services: Record<
        string,
        {
          cpus?: string | number;
          mem_limit?: string;
          cpuset?: string;
          image?: string;
          pull_policy?: string;
          network_mode?: string;
          ports?: string[];
          command?: string[];
          volumes?: string[];
        }
      >;
    };
    for (const gate of ['verifier', 'nginx', 'study-njs', 'study-node', 'njs-verify']) {
      const service = compose.services[gate];
      expect(
        { cpus: service?.cpus, mem: service?.mem_limit, cpuset: service?.cpuset },
        gate,
      ).toEqual({ cpus: '${STRESS_CPUS:-0.5}', mem: '${STRESS_MEMORY:-400m}', cpuset: '1' });
    }
    for (const [name, service] of Object.entries(compose.services)) {
      // Nothing is pulled: our images are built, the two bases come from test/containers/setup.sh.
      expect(service.pull_policy, name).toBe('never');
      for (const port of service.ports ?? []) expect(port, name).toMatch(/^127\.0\.0\.1:/);
      for (const volume of service.volumes ?? []) {
        const source = volume.split(':')[0]!;
        if (source.startsWith('./'))
          expect(existsSync(new URL(`../${source}`, import.meta.url)), source).toBe(true);
      }
    }
    const locust = compose.services.locust;
    expect(locust?.image).toBe('secret-gate-locust:${SECRET_GATE_TAG:-dev}');
    expect(locust?.network_mode).toBe('host');
    expect(locust?.cpuset).toBe('0');
    const host = locust?.command?.[locust.command.indexOf('--host') + 1];
    expect(host).toMatch(/^http:\/\/127\.0\.0\.1:/);
  });
});

describe('the docker engine', () => {
  it('runs locust in its own container on the host network and the load core, paths mounted as is', async () => {
    const { LOCUST_IMAGE, locustContainerCommand } = await import('./locust.js');
    const args = locustContainerCommand(
      'sg-locust',
      '0',
      '/tmp/s/tokens.txt',
      ['/r', '/tmp/s', '/r'],
      ['-c', '0', '/usr/bin/python3'],
    );
    expect(args.slice(0, 8)).toEqual([
      'run',
      '--rm',
      '--name',
      'sg-locust',
      '--network',
      'host',
      '--cpuset-cpus',
      '0',
    ]);
    expect(args.filter((arg) => arg.startsWith('/') && arg.includes(':'))).toEqual([
      '/r:/r',
      '/tmp/s:/tmp/s',
    ]);
    expect(args).toContain('SG_STRESS_TOKENS=/tmp/s/tokens.txt');
    expect(args.slice(-5)).toEqual(['taskset', LOCUST_IMAGE, '-c', '0', '/usr/bin/python3']);
  });
});

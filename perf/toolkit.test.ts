// The stress and bench harness pieces without load: options, limits fallback, CSV → report and
// chart, wrk output, bench goals. The report is rendered from a locust CSV recorded on a real run.
import { readFileSync, existsSync } from 'node:fs';
import { spawn } from 'node:child_process';
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
} from './limits.js';
import { locustArgs } from './locust.js';
import { parseCsvRecords, parseLocustCsv } from './locust-csv.js';
import { parseDuration, parseStressOptions } from './stress-options.js';
import { parseHwm, parseStat } from './process-stats.js';
import {
  bottleneckLine,
  evaluateGoals,
  renderReport,
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
    expect(options.profile).toEqual({ name: 'tight', cpu: 0.25, memoryMb: 64 });
    expect(options.users).toBe(200);
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
    'in cgroup mode starts a process inside its group with the quota and memory limit, and removes the group',
    async () => {
      const confinement = createConfinement({
        profile: PROFILES.tight,
        cpus: '0',
        runId: `test-${process.pid}`,
      });
      const wrapped = confinement.wrap('sleeper', { command: 'sleep', args: ['30'] }, true);
      const child = spawn(wrapped.command, [...wrapped.args], { stdio: 'ignore' });
      const exited = new Promise((resolve) => child.once('exit', resolve));
      const group = `secret-gate-stress-test-${process.pid}-sleeper`;
      try {
        let cgroups = '';
        for (let i = 0; i < 50 && !cgroups.includes(group); i++) {
          await new Promise((r) => setTimeout(r, 20));
          cgroups = readFileSync(`/proc/${child.pid}/cgroup`, 'utf8');
        }
        expect(cgroups).toContain(`:cpu:/${group}`);
        expect(cgroups).toContain(`:memory:/${group}`);
        expect(readFileSync(`/sys/fs/cgroup/cpu/${group}/cpu.cfs_quota_us`, 'utf8').trim()).toBe(
          '25000',
        );
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
    const total = stats.find((row) => row.Name === 'Aggregated');
    expect(evaluateGoals(PROFILES.study, 100, total).map((g) => g.verdict)).toEqual([
      'met',
      'met',
      'n/a',
    ]);
    expect(evaluateGoals(PROFILES.study, 2500, total).map((g) => g.verdict)).toEqual([
      'met',
      'met',
      'missed',
    ]);
    expect(evaluateGoals(PROFILES.tight, 2500, total).map((g) => g.goal)).toEqual([
      '0 failures',
      'p99 ≤ 250 ms',
    ]);
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
      help: false,
    });
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
      row(ROW_NAMES.studyNjs, 4000),
      row(ROW_NAMES.studyNode, 5000),
      row(ROW_NAMES.njsVerify, 5000),
    ]);
    expect(rows[1]?.ratio).toBe(0.4);
    expect(evaluateBenchGoals(rows).map((g) => [g.goal, g.met])).toEqual([
      ['/secret cached ≥ 0.33× the ceiling', true],
      ['/secret all-distinct ≥ 0.09× the ceiling', false],
      ['/secret cached ≥ 5× study-njs', true],
      ['/secret cached ≥ 5× study-node', false],
      ['/secret cached ≥ 4× njs-verify', true],
    ]);
  });
});

describe('docker-compose-stress.yaml', () => {
  it('limits every gate container like the study and runs locust on the other core', async () => {
    const { parse } = await import('yaml');
    const compose = parse(
      readFileSync(new URL('../docker-compose-stress.yaml', import.meta.url), 'utf8'),
      {
        merge: true,
      },
    ) as {
      services: Record<
        string,
        { deploy?: { resources?: { limits?: object } }; cpuset?: string; volumes?: string[] }
      >;
    };
    for (const gate of ['verifier', 'nginx', 'study-njs', 'study-node', 'njs-verify']) {
      expect(compose.services[gate]?.deploy?.resources?.limits, gate).toEqual({
        cpus: '0.5',
        memory: '400M',
      });
      expect(compose.services[gate]?.cpuset, gate).toBe('1');
    }
    expect(compose.services.locust?.cpuset).toBe('0');
    for (const service of Object.values(compose.services)) {
      for (const volume of service.volumes ?? []) {
        const source = volume.split(':')[0]!;
        if (source.startsWith('./'))
          expect(existsSync(new URL(`../${source}`, import.meta.url)), source).toBe(true);
      }
    }
  });
});

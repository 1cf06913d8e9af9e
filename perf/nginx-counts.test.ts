// The counted benchmark's pieces without valgrind or strace: reading a callgrind dump and an
// `strace -c` summary (recorded from real runs), dividing them per request, the table, the options
// and the client that sends exactly N requests on one connection.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { COUNT_DEFAULTS, COUNT_QUICK, parseCountOptions } from './count-options.js';
import { createKeepAliveClient } from './keepalive-client.js';
import {
  evaluateCountGoals,
  formatCounts,
  parseCallgrindTotals,
  parseStraceSummary,
  syscallsPerRequest,
} from './nginx-counts.js';

/** The head and tail of a `callgrind_control --dump` file of callgrind 3.19 (NGINX, 10 requests). */
const CALLGRIND_DUMP = `# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 41873
cmd:  /usr/sbin/nginx -p /tmp/x/stack/nginx -c /tmp/x/stack/nginx/nginx.conf -e stderr -g daemon off; master_process off;
part: 2
desc: I1 cache: 
desc: D1 cache: 
desc: LL cache: 
desc: Timerange: Basic block 1290314 - 1398214
desc: Trigger: dump row3

positions: line
events: Ir
summary: 0

ob=(1) /usr/lib/x86_64-linux-gnu/libc.so.6
fl=(1) ???
fn=(1) epoll_wait
0 12

totals: 2047391
`;

/** `strace -c -f -p WORKER` of NGINX over 10 edge-cache hits of /secret (strace 6.1). */
const STRACE_SUMMARY = `% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 31.20    0.000390           9        40           newfstatat
 14.16    0.000177           8        20        20 access
 10.32    0.000129           6        20           openat
  9.04    0.000113          11        10           sendfile
  7.92    0.000099           4        20           setsockopt
  6.16    0.000077           3        20           close
  5.76    0.000072           7        10           writev
  5.44    0.000068           6        10           pread64
  4.80    0.000060           6        10           recvfrom
  3.68    0.000046           2        21           epoll_wait
  1.52    0.000019           1        10           getpid
------ ----------- ----------- --------- --------- ----------------
100.00    0.001250           6       191        20 total
`;

describe('reading callgrind and strace output', () => {
  it('reads the instructions of a dump from its totals line, not the summary of the zeroed start', () => {
    expect(parseCallgrindTotals(CALLGRIND_DUMP)).toBe(2_047_391);
  });

  it('picks the Ir column when callgrind counted more events than instructions', () => {
    const dump = 'events: Dr Ir Dw\nsummary: 1 2 3\ntotals: 10 20 30\n';
    expect(parseCallgrindTotals(dump)).toBe(20);
  });

  it('falls back to the summary line of a dump that has no totals line', () => {
    expect(parseCallgrindTotals('events: Ir\nsummary: 4242\n')).toBe(4242);
  });

  it.each([
    ['anything else', 'hello world', /no "events:" line/],
    ['a dump without Ir', 'events: Dr\ntotals: 1\n', /no "Ir" event/],
    ['a dump without totals', 'events: Ir\n', /no "totals:" line/],
    ['a garbled total', 'events: Ir\ntotals: lots\n', /unreadable "totals:" line: lots/],
  ])('refuses %s with a message naming what is missing', (_, text, message) => {
    expect(() => parseCallgrindTotals(text)).toThrow(message);
  });

  it('reads calls per system call, with and without an errors column, leaving the total out', () => {
    const calls = parseStraceSummary(STRACE_SUMMARY);
    expect(calls.get('newfstatat')).toBe(40);
    expect(calls.get('access')).toBe(20);
    expect(calls.get('getpid')).toBe(10);
    expect(calls.has('total')).toBe(false);
    expect([...calls.values()].reduce((a, b) => a + b, 0)).toBe(191);
  });

  it('reads an empty summary (nothing called while attached) as no calls', () => {
    const empty = STRACE_SUMMARY.split('\n').slice(0, 2).join('\n') + '\n';
    expect(parseStraceSummary(empty).size).toBe(0);
  });

  it('refuses output that is not an strace -c summary', () => {
    expect(() => parseStraceSummary('strace: attach: ptrace(PTRACE_SEIZE, 1): EPERM')).toThrow(
      /not an strace -c summary/,
    );
  });

  it('divides system calls by the requests sent, leaving the idle epoll_wait out', () => {
    const count = syscallsPerRequest(parseStraceSummary(STRACE_SUMMARY), 10);
    expect(count.perRequest).toBe(17);
    expect(count.breakdown[0]).toEqual({ name: 'newfstatat', perRequest: 4 });
    expect(count.breakdown.map((entry) => entry.name)).not.toContain('epoll_wait');
    expect(() => syscallsPerRequest(new Map(), 0)).toThrow(/"requests" must be positive/);
  });

  it('prints one line per request kind with instructions relative to the first row', () => {
    const syscalls = syscallsPerRequest(parseStraceSummary(STRACE_SUMMARY), 10);
    const table = formatCounts([
      { name: '/hello', requests: 10, instructions: 24_900, syscalls },
      { name: '/secret', requests: 10, instructions: 204_180, syscalls },
    ]);
    const lines = table.split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(/^\/hello\s+24,900\s+1\.0×\s+17\.0\s+newfstatat 4, access 2/);
    expect(lines[2]).toMatch(/^\/secret\s+204,180\s+8\.2×/);
  });
});

describe('npm run bench:counts options', () => {
  it.each([
    [[], { ...COUNT_DEFAULTS, json: false }],
    [['--quick'], { ...COUNT_QUICK, json: false }],
    [['--quick', '--requests', '50'], { requests: 50, warmup: COUNT_QUICK.warmup, json: false }],
    [['--requests=7', '--json'], { requests: 7, warmup: COUNT_DEFAULTS.warmup, json: true }],
  ])('reads %j', (argv, expected) => {
    expect(parseCountOptions(argv)).toMatchObject(expected);
  });

  it('reports every bad option in one message', () => {
    expect(() => parseCountOptions(['--requests', '0', '--fast'])).toThrow(
      'invalid options: "--requests" must be a positive integer; unknown option "--fast"',
    );
  });
});

describe('the counted rows’ client', () => {
  it('sends exactly the asked number of requests, one after another on one connection', async () => {
    let connections = 0;
    let requests = 0;
    let inFlight = 0;
    let maxInFlight = 0;
    const server = createServer((req, res) => {
      requests += 1;
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      setTimeout(() => {
        inFlight -= 1;
        res.end(`ok ${String(req.headers['x-n'])}`);
      }, 2);
    });
    server.on('connection', () => (connections += 1));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const client = createKeepAliveClient(`http://127.0.0.1:${port}`);
    try {
      await client.send(5, (i) => ({ path: '/hello', headers: { 'x-n': String(i) } }), 200);
      await client.send(20, () => ({ path: '/hello' }), 200);
      expect({ connections, requests, maxInFlight }).toEqual({
        connections: 1,
        requests: 25,
        maxInFlight: 1,
      });
      await expect(client.send(3, () => ({ path: '/x' }), 204)).rejects.toThrow(
        'request 1 of 3 to /x answered 200, expected 204',
      );
    } finally {
      client.close();
      server.close();
    }
  });
});

describe('the counted goals', () => {
  const syscalls = (perRequest: number) => ({ perRequest, breakdown: [] });
  const rows = [
    { name: 'floor', requests: 10, instructions: 25_000, syscalls: syscalls(3) },
    { name: 'hit', requests: 10, instructions: 75_000, syscalls: syscalls(10) },
  ];

  it('meets the budget at exactly 3× the instructions of /hello and 10 system calls', () => {
    expect(evaluateCountGoals(rows, { floor: 'floor', cached: 'hit' })).toEqual([
      { goal: 'cached /secret ≤ 3× the instructions of /hello', value: 3, limit: 3, met: true },
      { goal: 'cached /secret ≤ 10 system calls', value: 10, limit: 10, met: true },
    ]);
  });

  it('misses it one instruction or one call over, and says so in the table', () => {
    const over = [rows[0]!, { ...rows[1]!, instructions: 75_001, syscalls: syscalls(11) }];
    const goals = evaluateCountGoals(over, { floor: 'floor', cached: 'hit' });
    expect(goals.map((g) => g.met)).toEqual([false, false]);
    expect(formatCounts(over, goals)).toContain('MISSED  cached /secret ≤ 10 system calls: 11.00');
  });

  it('judges nothing when a row is missing from the run', () => {
    expect(evaluateCountGoals(rows.slice(0, 1), { floor: 'floor', cached: 'hit' })).toEqual([]);
  });
});

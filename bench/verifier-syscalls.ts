// System calls per request, by kind, of six servers under the same load: the bare uWS 204; uWS
// plus the bare `crypto.verify` of the request's token (no verifier code); the deployed verifier
// (verifier/dist/main.js with VERIFIER_NODE_FLAGS) answering one cached token; the same verifier
// answering a new RS256 token per request; uWS plus the bare ES256 `crypto.verify` of a DPoP
// proof; the verifier answering a cached DPoP-bound token with a fresh proof each request
// (VERIFIER_DPOP=required, the in-memory replay store). Each is pinned to core 0, wrk on core 1 with the same
// connections and NGINX's /_verify headers; `perf stat` counts every system call, the usual ones
// by name, page faults and context switches per thread over the measured window (counting, unlike
// strace, does not slow the server down and so leaves the batching as it is), /proc the user and
// kernel CPU. It answers whether a new token's kernel time is more calls per request or the same
// calls shared by fewer requests per `epoll_wait` return, and what any server doing the verify
// over HTTP costs beside the bare verify in one process (the issue's denominator).
//   npm run bench:syscalls (builds the verifier first)
// BENCH_ROUNDS (3), BENCH_SECONDS (2), BENCH_TOKENS (22,000 a round), BENCH_CONNECTIONS (8),
// BENCH_LOAD_CPU (wrk's core, 1), BENCH_NODE_FLAGS (the deployed verifier's),
// BENCH_VERIFIER_MAIN (another build, e.g. a parent's dist).
// docs/performance.md, "The kernel's share of a new token, counted".
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  killOnExit,
  startMeasuredProcess,
  type MeasuredProcess,
} from '../perf/measured-process.js';
import { parsePerfStat, totalCount, type PerfStatCounts } from '../perf/perf-stat.js';
import { benchedVerifierEnv } from '../perf/systems.js';
import { freePort } from '../stack/ports.js';
import { VERIFIER_NODE_FLAGS, VERIFIER_PROCESS_ENV } from '../stack/service-env.js';
import {
  BENCH_AUDIENCE,
  BENCH_ISSUER,
  mintRs256Tokens,
  serveJwks,
  verifyScript,
} from './new-token-load.js';
import { BARE_UWS, UWS_PROOF_VERIFY, UWS_TOKEN_VERIFY } from './bare-servers.js';
import { proofJwk, thumbprintOf } from '../verifier/src/testing/dpop-proof.js';
import { bareVerifyMicros, mintProofs, proofWrkScript } from './dpop-parts.js';
import { runWrkSync } from './wrk.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
// Each round's verifier warms on 30 % of its share and must not run out in the measured seconds.
const TOKENS = Number(process.env.BENCH_TOKENS ?? 22_000 * ROUNDS);
/** wrk's core: 1 (its own) by default; 0 shares the server's, so no answer wakes another core. */
const LOAD_CPU = process.env.BENCH_LOAD_CPU ?? '1';
const MAIN = resolve(ROOT, process.env.BENCH_VERIFIER_MAIN ?? 'verifier/dist/main.js');
const flags = process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? [...VERIFIER_NODE_FLAGS];
/**
 * The calls counted by name (every tracepoint at once takes perf tens of seconds to attach to
 * each thread): what an event loop, its timers, the collector and the thread pools make. The
 * rest is counted in total (`raw_syscalls:sys_enter`) and shown as "other".
 */
const SYSCALLS = [
  'epoll_wait',
  'epoll_pwait',
  'epoll_ctl',
  'read',
  'recvfrom',
  'recvmsg',
  'write',
  'writev',
  'sendto',
  'sendmsg',
  'futex',
  'madvise',
  'mmap',
  'munmap',
  'mprotect',
  'brk',
  'getrandom',
  'timerfd_settime',
  'io_uring_enter',
  'getpid',
  'clock_gettime',
  'sched_yield',
  'rt_sigreturn',
  'openat',
  'close',
  'ioctl',
  'setsockopt',
  'getsockopt',
  'accept4',
  'shutdown',
];
const work = mkdtempSync(join(tmpdir(), 'verifier-syscalls-'));

const { tokens, jwk } = mintRs256Tokens(TOKENS);
const jwks = await serveJwks(jwk);
/** The DPoP rows' token, bound to the test proof key (`cnf.jkt`), from a JWKS of its own. */
const bound = mintRs256Tokens(1, { cnf: { jkt: await thumbprintOf('ec') } });
const boundJwks = await serveJwks(bound.jwk);
/** What NGINX sends as X-Original-Origin (SG_EXTERNAL_ORIGIN): the proofs' `htu` with /secret. */
const ORIGIN = 'https://gate.example';
/** The headers NGINX's /_verify sends for a DPoP request, besides the proof. */
const DPOP_HEADERS = [
  `Authorization: DPoP ${bound.tokens[0]}`,
  'X-SG-Policy: default',
  'X-Original-URI: /secret',
  'X-Original-Method: GET',
  `X-Original-Origin: ${ORIGIN}`,
  'X-SG-Client: 127.0.0.1',
];
/** Proofs a wrk run of one second may send at most (an ES256 verify each bounds the rate). */
const PROOFS_PER_SECOND = 15_000;

const script = (list: readonly string[], name: string) => verifyScript(work, list, name);

/** A DPoP row's load: a fresh proof each request, NGINX's headers for a DPoP request. */
const DPOP_LOAD = { proofs: 'fresh' } as const;
/** A wrk script's path, or DPOP_LOAD. */
type Load = string | typeof DPOP_LOAD;

/** wrk for `seconds` with `load`. */
function wrk(port: number, load: Load, seconds: number): number {
  const done = runWrkSync({
    url: `http://127.0.0.1:${port}/verify`,
    seconds,
    connections: CONNECTIONS,
    cpu: LOAD_CPU,
    ...(typeof load !== 'string'
      ? {
          headers: DPOP_HEADERS,
          script: proofWrkScript(
            mkdtempSync(join(work, 'proofs-')),
            mintProofs(
              PROOFS_PER_SECOND * seconds,
              Math.floor(Date.now() / 1000),
              bound.tokens[0],
              `${ORIGIN}/secret`,
            ),
          ),
        }
      : { script: load }),
  });
  if (done.non2xx > 0) throw new Error(`wrk saw refusals:\n${done.stdout}`);
  return done.requests;
}

/** The measured verifier's variables (errors only in its log). */
const benchedVerifier = (jwksUri: string, port: number) =>
  benchedVerifierEnv({
    issuer: BENCH_ISSUER,
    audience: BENCH_AUDIENCE,
    jwksUri,
    port,
    logLevel: 'error',
  });

/**
 * Node and `args` pinned to core 0, ready once `/readyz` answers at all on the port `env` gives
 * it (the bare servers answer any path, a refusal included).
 */
function startPinned(args: string[], env: Record<string, string>): Promise<MeasuredProcess> {
  const port = Number(env.PORT ?? env.VERIFIER_LISTEN?.split(':')[1]);
  return startMeasuredProcess({
    name: 'measured server',
    command: process.execPath,
    args,
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    cpu: '0',
    ready: { url: `http://127.0.0.1:${port}/readyz`, anyStatus: true },
    readyTimeoutMs: 10_000,
  });
}

/** Per thread name: user and kernel CPU in µs, minor faults (from /proc). */
function threadStats(pid: number): Map<string, { user: number; kernel: number; faults: number }> {
  const out = new Map<string, { user: number; kernel: number; faults: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const seen = out.get(name) ?? { user: 0, kernel: 0, faults: 0 };
    seen.user += Number(fields[11]) * 10_000;
    seen.kernel += Number(fields[12]) * 10_000;
    seen.faults += Number(fields[7]);
    out.set(name, seen);
  }
  return out;
}

interface Row {
  name: string;
  requests: number;
  user: number;
  kernel: number;
  faults: number;
  /** Event → per-thread-name counts over the window. */
  events: PerfStatCounts;
}

/** `perf stat` on every thread of `pid` while wrk sends `load`; counts per thread name. */
async function measure(name: string, pid: number, port: number, load: Load): Promise<Row> {
  const out = join(work, `${name.replace(/\W+/g, '-')}.perf`);
  const perf = spawn(
    'perf',
    [
      'stat',
      '--per-thread',
      '-x,',
      '-o',
      out,
      '-e',
      ['raw_syscalls:sys_enter', ...SYSCALLS.map((name) => `syscalls:sys_enter_${name}`)].join(),
      '-e',
      'page-faults,context-switches',
      '-p',
      String(pid),
    ],
    { stdio: 'ignore' },
  );
  killOnExit(perf);
  await new Promise((done) => setTimeout(done, 1000)); // perf attaches to every tracepoint first
  const before = threadStats(pid);
  const requests = wrk(port, load, SECONDS);
  const after = threadStats(pid);
  perf.kill('SIGINT');
  if (perf.exitCode === null) await new Promise((done) => perf.once('exit', done));
  const events = parsePerfStat(readFileSync(out, 'utf8'));
  let user = 0;
  let kernel = 0;
  let faults = 0;
  for (const [thread, stats] of after) {
    const was = before.get(thread) ?? { user: 0, kernel: 0, faults: 0 };
    user += stats.user - was.user;
    kernel += stats.kernel - was.kernel;
    faults += stats.faults - was.faults;
  }
  return { name, requests, user, kernel, faults, events };
}

async function bareRow(): Promise<Row> {
  const port = await freePort();
  const server = await startPinned(['-e', BARE_UWS], {
    PORT: String(port),
    NODE_PATH: join(ROOT, 'node_modules'),
  });
  const lua = script(tokens.slice(0, 1), 'one');
  wrk(port, lua, 1);
  const row = await measure('bare uWS 204', server.pid, port, lua);
  await server.stop();
  return row;
}

async function uwsVerifyRow(round: number): Promise<Row> {
  const port = await freePort();
  const server = await startPinned(['-e', UWS_TOKEN_VERIFY], {
    PORT: String(port),
    NODE_PATH: join(ROOT, 'node_modules'),
    JWK: JSON.stringify(jwk),
  });
  const lua = script(tokens.slice(round * 1000, round * 1000 + 20_000), `verify-${round}`);
  wrk(port, lua, 1);
  const row = await measure('uWS + bare verify', server.pid, port, lua);
  await server.stop();
  return row;
}

async function verifierRows(round: number): Promise<Row[]> {
  const port = await freePort();
  const server = await startPinned([...flags, MAIN], {
    ...VERIFIER_PROCESS_ENV,
    ...benchedVerifier(jwks.uri, port),
  });
  // Each round sends tokens no earlier round sent to its (new) process: a third warms, the rest are measured.
  const share = Math.floor(TOKENS / ROUNDS);
  const mine = tokens.slice(round * share, (round + 1) * share);
  const warm = Math.floor(share * 0.3);
  const cachedLua = script(mine.slice(0, 1), `cached-${round}`);
  wrk(port, cachedLua, 1);
  const cached = await measure('cached /verify', server.pid, port, cachedLua);
  wrk(port, script(mine.slice(1, warm), `warm-${round}`), 2);
  const fresh = await measure(
    'new RS256 token',
    server.pid,
    port,
    script(mine.slice(warm), `new-${round}`),
  );
  if (fresh.requests > share - warm)
    console.log(`(the token pool ran out: ${fresh.requests - (share - warm)} repeats were hits)`);
  await server.stop();
  return [cached, fresh];
}

const DPOP_ROWS = new Set(['uWS + proof verify', 'cached DPoP']);

/** The DPoP rows: uWS plus the proof's bare verify, then the verifier on a cached bound token. */
async function dpopRows(): Promise<Row[]> {
  const floorPort = await freePort();
  const floor = await startPinned(['-e', UWS_PROOF_VERIFY], {
    PORT: String(floorPort),
    NODE_PATH: join(ROOT, 'node_modules'),
    PROOF_JWK: JSON.stringify(proofJwk('ec')),
  });
  wrk(floorPort, DPOP_LOAD, 1);
  const rows = [await measure('uWS + proof verify', floor.pid, floorPort, DPOP_LOAD)];
  await floor.stop();
  const port = await freePort();
  const server = await startPinned([...flags, MAIN], {
    ...VERIFIER_PROCESS_ENV,
    ...benchedVerifier(boundJwks.uri, port),
    VERIFIER_DPOP: 'required',
  });
  wrk(port, DPOP_LOAD, 2);
  rows.push(await measure('cached DPoP', server.pid, port, DPOP_LOAD));
  await server.stop();
  return rows;
}

/**
 * CPU µs per token of the bare `crypto.verify` in one process on the server core (key prepared,
 * tokens split before the clock, the last of three passes): the issue's denominator.
 */
function bareVerify(list: readonly string[]): number {
  writeFileSync(join(work, 'bare.txt'), list.join('\n'));
  const source = `const { createPublicKey, verify } = require('node:crypto');
const key = createPublicKey({ key: JSON.parse(process.env.JWK), format: 'jwk' });
const parts = require('node:fs').readFileSync(process.env.TOKENS, 'utf8').split('\\n').map((token) => {
  const dot = token.lastIndexOf('.');
  return [Buffer.from(token.slice(0, dot)), Buffer.from(token.slice(dot + 1), 'base64url')];
});
let used = 0;
for (let pass = 0; pass < 3; pass++) {
  const start = process.cpuUsage();
  for (const [input, signature] of parts) if (!verify('sha256', input, key, signature)) process.exit(1);
  const spent = process.cpuUsage(start);
  used = spent.user + spent.system;
}
process.stdout.write(String(used / parts.length));`;
  const run = spawnSync('taskset', ['-c', '0', process.execPath, '-e', source], {
    env: { PATH: process.env.PATH ?? '', JWK: JSON.stringify(jwk), TOKENS: join(work, 'bare.txt') },
    encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`bare verify failed: ${run.stderr}`);
  return Number(run.stdout);
}

const per = (value: number, row: Row) => value / row.requests;
const ALL_CALLS = 'raw_syscalls:sys_enter';
const count = (row: Row, event: string) => totalCount(row.events, event);
const named = (row: Row) => SYSCALLS.reduce((sum, name) => sum + count(row, name), 0);

/**
 * One column per row: CPU, calls per request by name (the main thread's and the others'). `bare`:
 * each row's bare `crypto.verify` (the token's, or a DPoP row's proof's).
 */
function report(rows: Row[], bare: (row: Row) => number): void {
  const cell = (value: number) => (Number.isNaN(value) ? '—' : value.toFixed(2)).padStart(20);
  const line = (label: string, values: number[]) =>
    console.log(`${label.padEnd(36)}${values.map(cell).join('')}`);
  const each = (label: string, value: (row: Row) => number) => line(label, rows.map(value));
  console.log(`${''.padEnd(36)}${rows.map((row) => row.name.padStart(20)).join('')}`);
  each('requests', (row) => row.requests);
  each('CPU µs per request, user', (row) => per(row.user, row));
  each('CPU µs per request, kernel', (row) => per(row.kernel, row));
  each('CPU µs per request', (row) => per(row.user + row.kernel, row));
  each('  ÷ bare crypto.verify in-process', (row) => per(row.user + row.kernel, row) / bare(row));
  each('system calls per request', (row) => per(count(row, ALL_CALLS), row));
  for (const name of SYSCALLS) {
    if (!rows.some((row) => per(count(row, name), row) >= 0.01)) continue;
    each(`  ${name}`, (row) => per(count(row, name), row));
    // The threads beside the main one (named "node"), where they make the call at all.
    const others = new Set<string>();
    for (const row of rows)
      for (const thread of row.events.get(name)?.keys() ?? [])
        if (thread !== 'node') others.add(thread);
    for (const thread of others)
      each(`    of which ${thread}`, (row) => per(row.events.get(name)?.get(thread) ?? 0, row));
  }
  each('  other', (row) => per(count(row, ALL_CALLS) - named(row), row));
  each('page faults per request', (row) => per(count(row, 'page-faults'), row));
  each('context switches per request', (row) => per(count(row, 'context-switches'), row));
  each(
    'requests per epoll wait',
    (row) => row.requests / (count(row, 'epoll_wait') + count(row, 'epoll_pwait')),
  );
  each('kernel µs per system call', (row) => row.kernel / count(row, ALL_CALLS));
}

console.log(
  `Node ${process.versions.node}, ${flags.join(' ')}, ${MAIN.replace(ROOT, '')}, wrk -c${CONNECTIONS} ${SECONDS} s on core ${LOAD_CPU}, ` +
    `load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
);
for (let round = 0; round < ROUNDS; round++) {
  const rows = [
    await bareRow(),
    await uwsVerifyRow(round),
    ...(await verifierRows(round)),
    ...(await dpopRows()),
  ];
  const bare = bareVerify(tokens.slice(round * 1000, round * 1000 + 5000));
  const proofs = mintProofs(8_000, Math.floor(Date.now() / 1000), bound.tokens[0]);
  const bareProof = await bareVerifyMicros(proofs);
  console.log(
    `\nround ${round + 1}: bare crypto.verify in-process ${bare.toFixed(1)} µs per RS256 token (core 0), ${bareProof.toFixed(1)} µs per ES256 proof (this process)`,
  );
  report(rows, (row) => (DPOP_ROWS.has(row.name) ? bareProof : bare));
}
jwks.close();
boundJwks.close();
rmSync(work, { recursive: true, force: true });

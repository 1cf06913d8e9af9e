// `npm run bench:tracing`: what the verifier's OpenTelemetry traces cost, measured so that a 5 %
// difference can be read on a noisy shared machine. Three parts, each a ratio within one run:
//
// On the wire: the built verifier, one per mode, all started at once and pinned to core 0; wrk
// and this process (with the OTLP receiver) on core 1. Modes:
//   off             no OTEL_* (the default) and no traceparent: the deployed configuration
//   off + x-unread  no OTEL_*, the same generated header under a name the verifier never reads:
//                   the load generator's own share of a header, which every header mode pays
//   off + header    no OTEL_*, a traceparent on every request (NGINX with SG_TRACE_CONTEXT=on)
//   1 %             OTEL_* on (default parent-based sampler), NGINX's flag set on 1 request in 100
//   100 %           the same with every request sampled (http/protobuf); `100 % json`: http/json
// A rare mode (1 %) is first warmed to BENCH_WARM_SPANS sampled spans (5,000): V8 optimises the
// span's code only after ~3,000 of them. Short runs (BENCH_SECONDS, 2 s) in BENCH_ROUNDS rounds (5), each round every mode once, its
// order rotated, cached row (one token) then all-distinct row (a new RS256 token each); a mode's
// cost is the median over rounds of its CPU per request against `off`'s in the same round, with
// the lowest and highest round beside it: the spread of `off + x-unread` is what the wire resolves.
//
// In-process (bench/tracing-decisions.ts, one process per mode, pinned to core 0, interleaved over
// BENCH_INPROCESS_ROUNDS rounds, 3): the verifier service with tracing as main.ts starts it, no
// socket and no load generator; CPU per decision, the spans' export to this process's receiver
// included. `100 %, no export` has an exporter that drops every batch: with `100 % protobuf` it
// splits a recorded span's cost into the SDK's part and the export's. Beside it the header's
// parse and the bare SDK span, in this process.
//
// The gate (bench/tracing-gate.ts): `npm run bench`'s cached /secret and all-distinct rows through
// real NGINX with tracing off, NGINX's context only, 1 % and 100 %, BENCH_GATE_ROUNDS rounds (3)
// of BENCH_GATE_SECONDS (3): what a user's gate loses, beside the stricter verifier-only rows.
//
// Counted (bench/tracing-counts.ts, alone: `npm run bench:tracing-counts`): the verifier's
// instructions per cached /verify under callgrind with tracing off, the header's bytes under an
// unread name, the header only, 1 % (cold, with the export held, warm) and 100 %.
//
// NGINX: instructions per cached /secret with SG_TRACE_CONTEXT off and on (callgrind, as
// bench:counts). BENCH_ROWS=verifier, inprocess, gate, counts or nginx runs one part.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SpanKind } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { COUNT_DEFAULTS } from '../perf/count-options.js';
import { COUNT_ROW_NAMES, runNginxCounts } from '../perf/count-run.js';
import { startMeasuredProcess, type MeasuredProcess } from '../perf/measured-process.js';
import { processCpuMicros } from '../perf/process-stats.js';
import { benchedVerifierEnv } from '../perf/systems.js';
import { freePort } from '../stack/ports.js';
import { VERIFIER_NODE_FLAGS } from '../stack/service-env.js';
import { ISSUER as FIXTURE_ISSUER } from '../verifier/src/testing/fixtures.js';
import { readTraceparent, sampledFlag } from '../verifier/src/tracing/trace-context.js';
import type { DecisionMode } from './tracing-decisions.js';
import { minter } from './runtime-rows.js';
import { countRows } from './tracing-counts.js';
import { gateRows, goalVerdict } from './tracing-gate.js';
import { wrkCommand, wrkSummary } from './wrk.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ISSUER = 'https://bench.issuer.test';
const AUDIENCE = 'secret-gate-api';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const INPROCESS_ROUNDS = Number(process.env.BENCH_INPROCESS_ROUNDS ?? 3);
const CONNECTIONS = 32;
/** New tokens per round of the all-distinct row: its run stops when they are all answered. */
const PER_ROUND = Number(process.env.BENCH_DISTINCT_TOKENS ?? 10_000);
const WARM_TOKENS = 2_000;
const WARM_SPANS = Number(process.env.BENCH_WARM_SPANS ?? 5_000);
const WARM_LIMIT = 90;
const LOAD_CPU = cpus().length > 1 ? '1' : '0';
const work = mkdtempSync(join(tmpdir(), 'bench-tracing-'));
const children: ChildProcess[] = [];

interface Mode {
  readonly name: string;
  /** A traceparent on each request, sampled on one in `every` (0: never); undefined: none. */
  readonly sampleEvery: number | undefined;
  readonly otel: boolean;
  readonly protocol?: 'http/json';
  /** The header's name (default `traceparent`): another name costs wrk the same and the verifier nothing. */
  readonly header?: string;
}
const MODES: readonly Mode[] = [
  { name: 'off', sampleEvery: undefined, otel: false },
  { name: 'off + x-unread', sampleEvery: 0, otel: false, header: 'x-unread' },
  { name: 'off + header', sampleEvery: 0, otel: false },
  { name: '1 %', sampleEvery: 100, otel: true },
  { name: '100 %', sampleEvery: 1, otel: true },
  { name: '100 % json', sampleEvery: 1, otel: true, protocol: 'http/json' },
];
/** Issue 37's goals, against `off`. */
const GOALS: Readonly<Record<string, number>> = { '1 %': 5, '100 %': 15, '100 % json': 15 };

const DECISION_MODES: readonly DecisionMode[] = [
  { name: 'off', sampleEvery: undefined, exporter: 'none' },
  { name: 'off + header', sampleEvery: 0, exporter: 'none' },
  { name: '1 %', sampleEvery: 100, exporter: 'http/protobuf' },
  { name: '100 %, no export', sampleEvery: 1, exporter: 'drop' },
  { name: '100 % protobuf', sampleEvery: 1, exporter: 'http/protobuf' },
  { name: '100 % json', sampleEvery: 1, exporter: 'http/json' },
];

interface Row {
  rate: number;
  cpu: number;
  requests: number;
  non2xx: number;
}

function mintTokens(key: KeyObject, count: number): string[] {
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const header = b64({ alg: 'RS256', kid: 'bench-rsa', typ: 'at+jwt' });
  const now = Math.floor(Date.now() / 1000);
  return Array.from({ length: count }, (_, i) => {
    const input = `${header}.${b64({ iss: ISSUER, aud: AUDIENCE, sub: `user-${i}`, azp: 'spa-demo', scope: 'secrets:read', iat: now, exp: now + 3600, jti: `t-${i}` })}`;
    return `${input}.${sign('sha256', Buffer.from(input), key).toString('base64url')}`;
  });
}

/**
 * A wrk script: tokens in turn (or one), and the mode's traceparent, fresh ids each request.
 * `once`: stop when every token was answered, so no token is sent twice (a cache hit).
 */
function script(mode: Mode, tokens: readonly string[], name: string, once = false): string {
  const list = join(work, `${name}.txt`);
  writeFileSync(list, `${tokens.join('\n')}\n`);
  const path = join(work, `${name}.lua`);
  const header =
    mode.sampleEvery === undefined
      ? ''
      : `local flags = (${mode.sampleEvery} > 0 and i % ${Math.max(1, mode.sampleEvery)} == 0) and "01" or "00"
  headers["${mode.header ?? 'traceparent'}"] = string.format("00-%08x%08x%08x%08x-%08x%08x-%s", math.random(0, 0x7fffffff),
    math.random(0, 0x7fffffff), math.random(0, 0x7fffffff), i, math.random(0, 0x7fffffff), i, flags)`;
  writeFileSync(
    path,
    `local tokens = {}
for line in io.lines("${list}") do tokens[#tokens + 1] = "Bearer " .. line end
local i = 0
request = function()
  i = i + 1
  local headers = { ["Authorization"] = tokens[(i - 1) % #tokens + 1] }
  ${header}
  return wrk.format("GET", "/verify", headers)
end
${
  once
    ? `local answered = 0
response = function()
  answered = answered + 1
  if answered >= #tokens then wrk.thread:stop() end
end
`
    : ''
}`,
  );
  return path;
}

/** utime + stime of a process so far, in µs. */
function cpuMicros(pid: number): number {
  const { user, system } = processCpuMicros(pid);
  return user + system;
}

/** Runs a command to its end without blocking this process (the OTLP receiver lives here). */
function run(command: string, args: readonly string[], env?: NodeJS.ProcessEnv) {
  return new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, env: env ?? process.env });
    children.push(child);
    let [stdout, stderr] = ['', ''];
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

async function wrk(url: string, scriptPath: string, seconds: number, pid?: number): Promise<Row> {
  const before = pid === undefined ? 0 : cpuMicros(pid);
  const [command, args] = wrkCommand({
    url,
    seconds,
    connections: CONNECTIONS,
    cpu: LOAD_CPU,
    script: scriptPath,
  });
  const done = await run(command, args);
  if (done.status !== 0) throw new Error(`wrk failed: ${done.stderr}`);
  const { requests, rate, non2xx } = wrkSummary(done.stdout);
  return {
    rate,
    cpu: pid === undefined ? NaN : (cpuMicros(pid) - before) / requests,
    requests,
    non2xx,
  };
}

/** A verifier in `mode`, pinned to core 0, ready once its /readyz answers. */
async function startVerifier(mode: Mode, jwksUri: string, otlp: string) {
  const port = await freePort();
  const server = await startMeasuredProcess({
    name: `verifier, tracing ${mode.name}`,
    command: process.execPath,
    args: [...VERIFIER_NODE_FLAGS, 'verifier/dist/main.js'],
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      ...benchedVerifierEnv({ issuer: ISSUER, audience: AUDIENCE, jwksUri, port }),
      ...(mode.otel ? { OTEL_EXPORTER_OTLP_ENDPOINT: otlp } : {}),
      ...(mode.protocol ? { OTEL_EXPORTER_OTLP_PROTOCOL: mode.protocol } : {}),
    },
    cpu: '0',
    ready: { url: `http://127.0.0.1:${port}/readyz` },
    readyTimeoutMs: 20_000,
  });
  return { server, url: `http://127.0.0.1:${port}` };
}

/** The spans a verifier dropped (its queue full or an export failed): 0 keeps a row honest. */
async function droppedSpans(url: string): Promise<number> {
  const text = await fetch(`${url}/metrics`).then((r) => r.text());
  let dropped = 0;
  for (const match of text.matchAll(/^verifier_trace_spans_dropped_total\{[^}]*\} (\d+)/gm))
    dropped += Number(match[1]);
  return dropped;
}

/** An OTLP/HTTP receiver that only counts what arrives, in this process. */
async function startReceiver(): Promise<{ server: Server; url: string; bytes: () => number }> {
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${port}`, bytes: () => bytes };
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
const percent = (ratio: number): string => `${((ratio - 1) * 100).toFixed(1)}`;

/** `mode`'s cost against `off` per round (adjacent in time), as "median (lowest..highest) %". */
function costOf(costs: readonly number[]): { median: number; text: string } {
  const sorted = [...costs].sort((a, b) => a - b);
  return {
    median: median(costs),
    text: `${percent(median(costs)).padStart(6)} (${percent(sorted[0]!)}..${percent(sorted.at(-1)!)})`,
  };
}

async function verifierRows(otlp: string): Promise<string[]> {
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwks = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        keys: [{ ...rsa.publicKey.export({ format: 'jwk' }), kid: 'bench-rsa', alg: 'RS256' }],
      }),
    ),
  );
  const jwksPort = await freePort();
  await new Promise<void>((resolve) => jwks.listen(jwksPort, '127.0.0.1', resolve));
  const count = 1 + WARM_TOKENS + ROUNDS * PER_ROUND;
  process.stdout.write(`signing ${count} RS256 tokens... `);
  const tokens = mintTokens(rsa.privateKey, count);
  console.log('done');
  const verifiers = new Map<string, { url: string; pid: number; server: MeasuredProcess }>();
  for (const mode of MODES) {
    const started = await startVerifier(mode, `http://127.0.0.1:${jwksPort}/jwks`, otlp);
    verifiers.set(mode.name, { ...started, pid: started.server.pid });
  }
  const cachedScripts = new Map(
    MODES.map((mode, i) => [mode.name, script(mode, tokens.slice(0, 1), `cached-${i}`)]),
  );
  for (const [i, mode] of MODES.entries()) {
    const { url } = verifiers.get(mode.name)!;
    const first = await wrk(url, cachedScripts.get(mode.name)!, 1);
    // V8 optimises a function after ~3,000 calls' worth of its bytecode (TurboFan's threshold):
    // at 1 % the span's code reaches it only after ~300,000 requests, so a short warm-up would
    // measure the interpreted span of a verifier's first minute. Rare modes are warmed to
    // WARM_SPANS sampled spans first (bounded by WARM_LIMIT seconds).
    if (mode.otel && (mode.sampleEvery ?? 0) > 1) {
      const seconds = Math.ceil((WARM_SPANS * mode.sampleEvery!) / first.rate);
      await wrk(url, cachedScripts.get(mode.name)!, Math.min(WARM_LIMIT, seconds));
    }
    await wrk(url, script(mode, tokens.slice(1, 1 + WARM_TOKENS), `warm-${i}`), 1);
  }
  const rows = new Map<string, { cached: Row[]; distinct: Row[] }>(
    MODES.map((mode) => [mode.name, { cached: [], distinct: [] }]),
  );
  for (let round = 0; round < ROUNDS; round++) {
    // The same new tokens for every mode: each verifier has its own cache.
    const from = 1 + WARM_TOKENS + round * PER_ROUND;
    const fresh = tokens.slice(from, from + PER_ROUND);
    const order = MODES.map((_, i) => MODES[(i + round) % MODES.length]!);
    const line: string[] = [];
    for (const mode of order) {
      const { url, pid } = verifiers.get(mode.name)!;
      const cached = await wrk(url, cachedScripts.get(mode.name)!, SECONDS, pid);
      const distinctScript = script(mode, fresh, `distinct-${round}-${MODES.indexOf(mode)}`, true);
      const distinct = await wrk(url, distinctScript, SECONDS, pid);
      rows.get(mode.name)!.cached.push(cached);
      rows.get(mode.name)!.distinct.push(distinct);
      line.push(`${mode.name} ${cached.cpu.toFixed(1)}/${distinct.cpu.toFixed(1)}`);
    }
    console.log(`round ${round + 1} (µs CPU/req cached/distinct): ${line.join(', ')}`);
  }
  const dropped = new Map<string, number>();
  for (const mode of MODES)
    if (mode.otel) dropped.set(mode.name, await droppedSpans(verifiers.get(mode.name)!.url));
  for (const { server } of verifiers.values()) await server.stop();
  jwks.close();

  const off = rows.get('off')!;
  const lines = [
    `verifier: wrk -t1 -c${CONNECTIONS}, ${ROUNDS} rounds of ${SECONDS} s per mode and row, modes rotated each round; server on cpu 0, wrk and the OTLP receiver on cpu ${LOAD_CPU}`,
    'cost: median over rounds of CPU/request against `off` in the same round (lowest..highest round)',
    'mode             cached req/s  µs CPU/req  cost %                 distinct req/s  µs CPU/req  cost %                 goal',
  ];
  for (const mode of MODES) {
    const row = rows.get(mode.name)!;
    const ratios = (kind: 'cached' | 'distinct') =>
      row[kind].map((r, round) => r.cpu / off[kind][round]!.cpu);
    const cached = costOf(ratios('cached'));
    const distinct = costOf(ratios('distinct'));
    const met = goalVerdict(GOALS[mode.name], Math.max(cached.median, distinct.median));
    const cell = (rs: Row[], cost: { text: string }) =>
      `${median(rs.map((r) => r.rate)).toFixed(0)}  ${median(rs.map((r) => r.cpu)).toFixed(1)}  ${mode.name === 'off' ? '–' : cost.text}`;
    lines.push(
      `${mode.name.padEnd(15)}  ${cell(row.cached, cached).padStart(40)}  ${cell(row.distinct, distinct).padStart(40)}  ${met}`,
    );
    for (const [kind, rs] of Object.entries(row))
      for (const r of rs) {
        if (r.non2xx > 0)
          lines.push(`warning: ${mode.name} ${kind} had ${r.non2xx} non-2xx answers`);
        if (kind === 'distinct' && r.requests < PER_ROUND / 4)
          lines.push(
            `warning: ${mode.name} distinct measured only ${r.requests} requests (raise BENCH_SECONDS)`,
          );
      }
    if (dropped.get(mode.name))
      lines.push(`warning: ${mode.name} dropped ${dropped.get(mode.name)} spans`);
  }
  return lines;
}

/** Best of 5 rounds of `calls` calls, CPU µs per call (user + system, this process). */
function cpuPerCall(calls: number, call: (i: number) => unknown): number {
  let best = Infinity;
  for (let round = 0; round < 5; round++) {
    const before = process.cpuUsage();
    for (let i = 0; i < calls; i++) call(i);
    const used = process.cpuUsage(before);
    best = Math.min(best, (used.user + used.system) / calls);
  }
  return best;
}

async function inProcessRows(otlp: string): Promise<string[]> {
  // The fixture key's tokens: the child verifies them against the fixture's key set.
  const tokensFile = join(work, 'inprocess-tokens.txt');
  const mint = minter('rsaA', 'RS256');
  writeFileSync(tokensFile, Array.from({ length: 4_001 }, (_, i) => mint(i)).join('\n'));
  const results = new Map<string, { cached: number; distinct: number }[]>(
    DECISION_MODES.map((mode) => [mode.name, []]),
  );
  for (let round = 0; round < INPROCESS_ROUNDS; round++)
    for (const [i] of DECISION_MODES.entries()) {
      const mode = DECISION_MODES[(i + round) % DECISION_MODES.length]!;
      const done = await run(
        'taskset',
        [
          '-c',
          '0',
          process.execPath,
          '--import',
          'tsx',
          'bench/tracing-decisions.ts',
          JSON.stringify(mode),
          tokensFile,
        ],
        {
          PATH: process.env.PATH ?? '',
          OTEL_EXPORTER_OTLP_ENDPOINT: otlp,
          ...(mode.exporter === 'http/json' ? { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' } : {}),
        },
      );
      if (done.status !== 0) throw new Error(`${mode.name} failed: ${done.stderr}`);
      const figures = JSON.parse(done.stdout.trim().split('\n').at(-1)!) as {
        cached: number;
        distinct: number;
      };
      results.get(mode.name)!.push(figures);
      console.log(
        `in-process round ${round + 1} ${mode.name}: cached ${figures.cached.toFixed(2)} µs, distinct ${figures.distinct.toFixed(1)} µs`,
      );
    }
  const off = results.get('off')!;
  const lines = [
    `in-process (no socket, no load generator), CPU µs per decision, spans exported to the receiver; median of ${INPROCESS_ROUNDS} interleaved rounds:`,
    'mode                cached µs  cost %                 distinct µs  cost %',
  ];
  for (const mode of DECISION_MODES) {
    const row = results.get(mode.name)!;
    const cached = costOf(row.map((r, k) => r.cached / off[k]!.cached));
    const distinct = costOf(row.map((r, k) => r.distinct / off[k]!.distinct));
    lines.push(
      `${mode.name.padEnd(18)}  ${median(row.map((r) => r.cached))
        .toFixed(2)
        .padStart(9)}  ${(mode.name === 'off' ? '–' : cached.text).padEnd(21)}  ${median(
        row.map((r) => r.distinct),
      )
        .toFixed(1)
        .padStart(11)}  ${mode.name === 'off' ? '–' : distinct.text}`,
    );
  }

  const calls = 100_000;
  const headers = Array.from(
    { length: 1024 },
    (_, i) =>
      `00-4bf92f3577b34da6a3ce929d${(i + 1).toString(16).padStart(8, '0')}-00f067aa0ba902b7-00`,
  );
  const parse = cpuPerCall(calls, (i) => readTraceparent(headers[i & 1023]));
  const flag = cpuPerCall(calls, (i) => sampledFlag(headers[i & 1023]));
  const provider = new NodeTracerProvider({
    spanProcessors: [
      new BatchSpanProcessor({
        export: (_spans, done) => done({ code: ExportResultCode.SUCCESS }),
        shutdown: () => Promise.resolve(),
      }),
    ],
  });
  const tracer = provider.getTracer('bench');
  const start = { 'secret_gate.policy': 'default', 'secret_gate.dpop': false };
  const outcome = {
    'secret_gate.outcome': 'allow',
    'secret_gate.reason': 'allowed',
    'secret_gate.step_up': 'met',
  };
  const span = () => {
    const one = tracer.startSpan('verify', { kind: SpanKind.SERVER, attributes: start });
    one.setAttribute('secret_gate.token_cache', 'hit');
    one.setAttributes(outcome);
    one.setAttribute('secret_gate.issuer', FIXTURE_ISSUER);
    one.setAttribute('secret_gate.client', 'spa-demo');
    one.end();
  };
  const sdkSpan = cpuPerCall(calls, span);
  await provider.shutdown();
  lines.push(
    '',
    `in this process, CPU µs per call, best of 5 × ${calls.toLocaleString('en')}:`,
    `readTraceparent (the ids cut out)         ${parse.toFixed(2)}`,
    `sampledFlag (unsampled: no allocation)    ${flag.toFixed(2)}`,
    `OpenTelemetry SDK span, 8 attributes      ${sdkSpan.toFixed(2)}  (start, end, batch queue; no export)`,
  );
  return lines;
}

async function nginxRows(): Promise<string[]> {
  const lines = [
    `NGINX per cached /secret (callgrind, one process, ${COUNT_DEFAULTS.requests} requests after ${COUNT_DEFAULTS.warmup} of warm-up):`,
  ];
  let base = 0;
  for (const trace of ['off', 'on']) {
    const dir = join(work, `counts-${trace}`);
    const rows = await runNginxCounts({
      ...COUNT_DEFAULTS,
      dir,
      rows: [COUNT_ROW_NAMES.cached],
      nginxEnv: { SG_TRACE_CONTEXT: trace },
      log: (line) => process.stderr.write(`${line}\n`),
    });
    const cached = rows.find((row) => row.name === COUNT_ROW_NAMES.cached)!;
    if (trace === 'off') base = cached.instructions;
    const calls = cached.syscalls.perRequest;
    lines.push(
      `SG_TRACE_CONTEXT=${trace}: ${Math.round(cached.instructions).toLocaleString('en')} instructions` +
        (trace === 'off' ? '' : ` (+${((cached.instructions / base - 1) * 100).toFixed(1)} %)`) +
        `, ${calls.toFixed(1)} system calls`,
    );
  }
  return lines;
}

async function main(): Promise<void> {
  const rows = new Set(
    (process.env.BENCH_ROWS ?? 'verifier,inprocess,gate,counts,nginx').split(','),
  );
  const build = spawnSync('npm', ['run', '--silent', 'build:verifier'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  if (build.status !== 0) throw new Error('npm run build:verifier failed');
  const receiver = await startReceiver();
  // This process (the OTLP receiver) shares the load generator's core, never the servers'.
  spawnSync('taskset', ['-a', '-p', '-c', LOAD_CPU, String(process.pid)], { stdio: 'ignore' });
  const report: string[] = [];
  if (rows.has('verifier')) report.push(...(await verifierRows(receiver.url)), '');
  if (rows.has('gate'))
    report.push(
      ...(await gateRows({
        otlp: receiver.url,
        seconds: Number(process.env.BENCH_GATE_SECONDS ?? 3),
        rounds: Number(process.env.BENCH_GATE_ROUNDS ?? 3),
        dir: join(work, 'gate'),
        log: (line) => console.log(line),
      })),
      '',
    );
  if (rows.has('inprocess')) report.push(...(await inProcessRows(receiver.url)), '');
  if (rows.has('counts'))
    report.push(
      ...(await countRows({
        otlp: receiver.url,
        dir: work,
        log: (line) => console.log(line),
      })),
      '',
    );
  report.push(`${(receiver.bytes() / 1024).toFixed(0)} KiB of spans received`, '');
  receiver.server.close();
  if (rows.has('nginx')) report.push(...(await nginxRows()));
  console.log(['', ...report].join('\n'));
}

try {
  await main();
} finally {
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
  if (!process.env.SG_BENCH_KEEP) rmSync(work, { recursive: true, force: true });
}

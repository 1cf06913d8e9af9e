// A cached /verify against a bare uWS handler answering 204 to the same request bytes (NGINX's
// /_verify headers, snippets/verify-endpoint.conf), the compiled verifier with the deployed heap
// flags; each `--dist` is another verifier build (a parent commit's, say), all interleaved round
// by round (`--rounds N`, default 2).
//   npm run bench:cached-verify [-- --dist DIR/verifier/dist/main.js … --rounds N]
// Counted (the default), as DESIGN.md counts NGINX: each server as one process under callgrind,
// warmed with WARM-UP requests of one cached RS256 token (20,000: fewer leave TurboFan compiling
// inside the count), zeroed, sent REQUESTS more over CONNECTIONS keep-alive connections, dumped;
// instructions per request are the dump's total ÷ REQUESTS (user space of every thread: JIT code,
// GC, uWS, libc). Valgrind hides the CPU's SHA extensions, so the cache key's SHA-256 counts
// ~20k instructions that take well under a microsecond on a CPU that has them.
// `--time`: each server pinned to core 0, wrk on core 1 (as bench:verifier), CPU per request
// (user + system, from /proc) over `--seconds` (default 3) after a second of warm-up.
// `--dpop`: the cached DPoP request instead (a token bound to the fixtures' `ec` key, a policy
// with `VERIFIER_DPOP=required`, a fresh ES256 proof each request from pools minted as the run
// goes), beside a bare uWS handler that verifies each proof's signature and answers 204 (the HTTP
// exchange at the rate an ES256 verify allows) and, timed, the bare `crypto.verify` of the same
// proofs in-process (issue 40 item 4: the verifier's CPU per request within +40 µs of it).
// System calls per request, the DPoP request's too: `npm run bench:syscalls`.
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startMeasuredProcess, type MeasuredProcess } from '../perf/measured-process.js';
import { processCpuMicros } from '../perf/process-stats.js';
import { LOAD_TEST_VERIFIER_ENV } from '../perf/systems.js';
import { VERIFIER_NODE_FLAGS } from '../stack/service-env.js';
import { freePort } from '../stack/ports.js';
import { proofJwk, thumbprintOf } from '../verifier/src/testing/dpop-proof.js';
import { AUDIENCE, ISSUER, mintToken, startJwksServer } from '../verifier/src/testing/fixtures.js';
import { bareVerifyMicros, mintProofs, proofWrkScript } from './dpop-parts.js';
import { BARE_UWS, UWS_PROOF_VERIFY } from './bare-servers.js';
import { runWrkSync } from './wrk.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const argv = process.argv.slice(2);
const option = (name: string) => argv.flatMap((arg, i) => (arg === name ? [argv[i + 1]!] : []));
const WARM_UP = Number(option('--warm-up')[0] ?? 20_000);
const REQUESTS = 4_000;
const CONNECTIONS = 8;

const dists = option('--dist').map((path) => resolve(path));
if (dists.length === 0) dists.push(join(ROOT, 'verifier/dist/main.js'));
const rounds = Number(option('--rounds')[0] ?? 2);
/**
 * `--keep`: leave the dumps for callgrind_annotate; with `--perf-map` the JIT's code is named in
 * /tmp/perf-PID.map (node's `--perf-basic-prof`), where callgrind only has addresses.
 */
const keep = argv.includes('--keep') ? true : undefined;
const perfMap = argv.includes('--perf-map') ? ['--perf-basic-prof'] : [];
const timed = argv.includes('--time');
const SECONDS = Number(option('--seconds')[0] ?? 3);
const dpop = argv.includes('--dpop');
/** Proofs per wrk run: more than the fastest server answers in its seconds (else a replay, a 401). */
const PROOFS_PER_RUN = Number(option('--proofs')[0] ?? 60_000);
/** What NGINX sends as X-Original-Origin (SG_EXTERNAL_ORIGIN), the proofs' `htu` with the URI. */
const ORIGIN = 'https://gate.example';

// One token, cached for the whole run (the fixtures' dev-IdP shape, an hour's lifetime); with
// `--dpop` bound to the `ec` key (`cnf.jkt`).
const exp = Math.floor(Date.now() / 1000) + 3600;
const token = await mintToken({
  claims: dpop ? { exp, cnf: { jkt: await thumbprintOf('ec') } } : { exp },
});

/**
 * What NGINX's /_verify location sends for a bearer request (its empty headers are left out); a
 * DPoP request has the DPoP scheme, the external origin and, per request, its proof (wrk's script).
 */
const REQUEST = Buffer.from(
  [
    'GET /verify HTTP/1.1',
    'Host: sg_verifier',
    dpop ? `Authorization: DPoP ${token}` : `Authorization: Bearer ${token}`,
    'X-SG-Policy: default',
    'X-Original-URI: /secret',
    'X-Original-Method: GET',
    ...(dpop ? [`X-Original-Origin: ${ORIGIN}`] : []),
    'X-SG-Client: 127.0.0.1',
    '',
    '',
  ].join('\r\n'),
);

/**
 * The bytes of one DPoP request: REQUEST with the next proof of a pool (minted when needed, so
 * no `jti` is sent twice, and small, so their `iat` stays inside the verifier's 60 s window even
 * at callgrind's pace while the JIT warms up).
 */
let proofPool: string[] = [];
function nextDpopRequest(): Buffer {
  if (proofPool.length === 0)
    proofPool = mintProofs(500, Math.floor(Date.now() / 1000), token, `${ORIGIN}/secret`);
  const head = REQUEST.subarray(0, REQUEST.length - 2);
  return Buffer.concat([head, Buffer.from(`DPoP: ${proofPool.pop()!}\r\n\r\n`)]);
}

/** `count` requests over CONNECTIONS connections, one at a time on each; every answer a 204. */
async function send(port: number, count: number): Promise<void> {
  let left = count;
  const request = dpop ? nextDpopRequest : () => REQUEST;
  const one = () =>
    new Promise<void>((done, fail) => {
      const socket = connect(port, '127.0.0.1');
      let seen = '';
      const next = () => {
        if (left === 0) return socket.end(() => done());
        left--;
        socket.write(request());
      };
      socket.setEncoding('latin1');
      socket.on('connect', next);
      socket.on('error', fail);
      socket.on('data', (chunk: string) => {
        seen += chunk;
        // Answers without a body: each ends at its blank line.
        let end: number;
        while ((end = seen.indexOf('\r\n\r\n')) >= 0) {
          const head = seen.slice(0, end);
          seen = seen.slice(end + 4);
          if (!head.startsWith('HTTP/1.1 204')) return fail(new Error(`answered ${head}`));
          next();
        }
      });
    });
  await Promise.all(Array.from({ length: CONNECTIONS }, one));
}

/**
 * Runs `measure` against one server, node and `args` on a fresh port, pinned to core 0 (`--time`)
 * or under callgrind (its dumps in `dir`): answering before `measure` runs, killed after.
 */
async function withServer<T>(
  launch: { cpu: string } | { callgrind: { dir: string; jit: true } },
  args: readonly string[],
  env: Record<string, string>,
  measure: (port: number, server: MeasuredProcess) => Promise<T>,
): Promise<T> {
  const port = await freePort();
  const server = await startMeasuredProcess({
    name: 'measured server',
    command: process.execPath,
    args: [...perfMap, ...args],
    cwd: ROOT,
    env: serverEnv(port, env),
    ...launch,
    ready: { url: `http://127.0.0.1:${port}/readyz` },
    readyTimeoutMs: 180_000,
    stopSignal: 'SIGKILL',
  });
  try {
    return await measure(port, server);
  } finally {
    await server.stop();
  }
}

/** A measured server's environment: both servers listen on `port` (the floor reads PORT). */
const serverEnv = (port: number, env: Record<string, string>) => ({
  PATH: process.env.PATH ?? '',
  PORT: String(port),
  ...env,
  VERIFIER_LISTEN: `127.0.0.1:${port}`,
});

/** Instructions per request of one server: `args` after node, under callgrind. */
async function count(args: string[], env: Record<string, string>): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'cached-verify-'));
  try {
    return await withServer({ callgrind: { dir, jit: true } }, args, env, async (port, server) => {
      await send(port, WARM_UP);
      await server.zero();
      await send(port, REQUESTS);
      const counted = await server.dump('counted');
      if (keep !== undefined) console.log(`callgrind dumps kept in ${dir} (pid ${server.pid})`);
      return counted / REQUESTS;
    });
  } finally {
    if (keep === undefined) rmSync(dir, { recursive: true, force: true });
  }
}

/** wrk on the load core with the request's headers; server CPU µs per request of `pid`. */
function wrk(port: number, seconds: number, pid?: number): number {
  const before = pid === undefined ? undefined : processCpuMicros(pid);
  const headers = REQUEST.toString('latin1')
    .split('\r\n')
    .slice(2)
    .filter((line) => line !== '');
  const dir = dpop ? mkdtempSync(join(tmpdir(), 'cached-dpop-')) : undefined;
  try {
    const done = runWrkSync({
      url: `http://127.0.0.1:${port}/verify`,
      seconds,
      connections: 32,
      cpu: cpus().length > 1 ? '1' : '0',
      headers,
      ...(dir === undefined
        ? {}
        : {
            script: proofWrkScript(
              dir,
              mintProofs(PROOFS_PER_RUN, Math.floor(Date.now() / 1000), token, `${ORIGIN}/secret`),
            ),
          }),
    });
    // With --dpop, a pool used up (a proof sent twice) is refused as a replay: raise --proofs.
    if (done.non2xx > 0) throw new Error(`wrk saw refusals:\n${done.stdout}`);
    if (pid === undefined || before === undefined) return NaN;
    const after = processCpuMicros(pid);
    const user = (after.user - before.user) / done.requests;
    const system = (after.system - before.system) / done.requests;
    console.log(`  user ${user.toFixed(1)} + system ${system.toFixed(1)} µs per request`);
    return user + system;
  } finally {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  }
}

/** Server CPU µs per request of one server: `args` after node, pinned to core 0. */
function time(args: string[], env: Record<string, string>): Promise<number> {
  return withServer({ cpu: '0' }, args, env, (port, server) => {
    wrk(port, 1);
    return Promise.resolve(wrk(port, SECONDS, server.pid));
  });
}

const measure = timed ? time : count;
const unit = timed ? 'µs of server CPU' : 'instructions';
const jwks = await startJwksServer(['rsaA']);
const verifierEnv = {
  VERIFIER_ISSUER: ISSUER,
  VERIFIER_AUDIENCE: AUDIENCE,
  VERIFIER_JWKS_URI: jwks.url,
  VERIFIER_REQUIRED_SCOPES: 'secrets:read',
  VERIFIER_LOG_LEVEL: 'warn',
  ...(dpop ? { VERIFIER_DPOP: 'required' } : {}),
  ...LOAD_TEST_VERIFIER_ENV,
};
/** The bare ES256 verify of a pool like the runs' (`--dpop`), in this process, CPU µs per proof. */
const BARE_ES256 = 'bare ES256 crypto.verify of the proofs';
const UWS_PROOF_VERIFY_ROW = 'bare uWS 204 after crypto.verify of the proof';
const rows: Array<[string, () => Promise<number>]> = [
  ['bare uWS 204', () => measure(['-e', BARE_UWS], { NODE_PATH: join(ROOT, 'node_modules') })],
  ...(dpop
    ? [
        [
          UWS_PROOF_VERIFY_ROW,
          () =>
            measure(['-e', UWS_PROOF_VERIFY], {
              NODE_PATH: join(ROOT, 'node_modules'),
              PROOF_JWK: JSON.stringify(proofJwk('ec')),
            }),
        ] as [string, () => Promise<number>],
      ]
    : []),
  ...dists.map((dist): [string, () => Promise<number>] => [
    `${dpop ? 'cached DPoP' : 'cached'} /verify ${dist}`,
    () => measure([...VERIFIER_NODE_FLAGS, dist], verifierEnv),
  ]),
  ...(dpop && timed
    ? [
        [
          BARE_ES256,
          () =>
            bareVerifyMicros(
              mintProofs(16_000, Math.floor(Date.now() / 1000), token, `${ORIGIN}/secret`),
            ),
        ] as [string, () => Promise<number>],
      ]
    : []),
];
const results = new Map<string, number[]>(rows.map(([name]) => [name, []]));
try {
  for (let round = 0; round < rounds; round++)
    for (const [name, run] of rows) {
      const figure = await run();
      results.get(name)!.push(figure);
      console.log(
        `round ${round + 1}: ${name}: ${figure.toFixed(timed ? 1 : 0)} ${unit} per request`,
      );
    }
} finally {
  await jwks.close();
}
const floors = results.get('bare uWS 204')!;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const shown = (n: number) => (timed ? n.toFixed(1) : Math.round(n).toLocaleString('en'));
console.log(
  timed
    ? `\nserver CPU µs per request (wrk -c32 for ${SECONDS} s after 1 s of warm-up), and ÷ the same round's floor:`
    : `\ninstructions per request (${REQUESTS} after ${WARM_UP} of warm-up, ${CONNECTIONS} connections), and ÷ the same round's floor:`,
);
for (const [name, figures] of results) {
  const ratios = figures.map((n, round) => n / floors[round]!);
  console.log(
    `${name}: ${figures.map(shown).join(' · ')}  (${ratios.map((r) => `${r.toFixed(2)}×`).join(' · ')}; median ${median(ratios).toFixed(2)}×)`,
  );
}
if (dpop && timed) {
  // Against the goal's floor (the bare verify in-process) and against the same verify behind a
  // bare uWS handler: the second difference is the verifier's own work, the HTTP exchange at
  // this rate left out.
  for (const [floor, title] of [
    [BARE_ES256, "\nover the same round's bare ES256 verify (goal: ≤ +40 µs):"],
    [UWS_PROOF_VERIFY_ROW, "over the same round's bare uWS 204 after the same verify:"],
  ] as const) {
    const bare = results.get(floor)!;
    console.log(title);
    for (const [name, figures] of results) {
      if (
        !name.startsWith('cached DPoP') &&
        !(floor === BARE_ES256 && name === UWS_PROOF_VERIFY_ROW)
      )
        continue;
      const over = figures.map((n, round) => n - bare[round]!);
      console.log(
        `${name}: ${over.map((n) => `+${n.toFixed(1)}`).join(' · ')} µs (median +${median(over).toFixed(1)})`,
      );
    }
  }
}

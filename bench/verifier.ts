// Verifier throughput, in one run so the ratios are comparable on a noisy machine:
//   ceiling    bare uWS handler answering 204
//   same I/O   uWS reading the headers /verify reads and writing the 3 headers of an allow (no
//              logic): splits the cached row's cost into transport work and ours
//   cached     /verify with one token (decision cache hit)
//   distinct   /verify with all-distinct RS256 tokens (full verification each time)
//   revocation /verify cached with back-channel logout on and 1,000 other users signed out: the
//              per-request revocation check (cache hits included)
//   jose       jwtVerify in a loop, in-process, no HTTP
// Servers run pinned to core 0 and wrk to core 1 (taskset), so one core serves, as in a sidecar.
// Last, peak RSS of a verifier holding 100,000 distinct cached decisions (ES256 tokens, because
// minting 100k RS256 tokens would dominate the run; the cache entry does not depend on `alg`),
// with Node's default heap sizing and with the lean V8 limits the README recommends.
// First, the in-process rows on Node 20 (end of life, the comparison), 22 and 24 side by side
// (bench/runtimes.ts). BENCH_ROWS=runtimes, BENCH_ROWS=throughput, BENCH_ROWS=rss or
// BENCH_ROWS=revocation (the ceiling, the cached row and the revocation-on row only) runs one part.
// BENCH_VERIFIER_MAIN runs another build's main.js in the verifier rows (a parent commit's, for
// an A/B in one sitting); BENCH_NODE_FLAGS replaces the deployed Node flags in them (space-separated).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  createPublicKey,
  generateKeyPairSync,
  randomUUID,
  sign,
  verify,
  type JsonWebKey,
  type KeyObject,
} from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, get } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { freePort } from '../stack/ports.js';
import { LOAD_TEST_VERIFIER_ENV } from '../perf/systems.js';
import { VERIFIER_NODE_FLAGS, VERIFIER_PROCESS_ENV } from '../stack/service-env.js';
import { COMPARED_VERSIONS, runtimeTable } from './runtimes.js';
import { IMAGES, buildImages, docker, missingEngine } from '../test/containers/engine.js';
import { secretSetName } from '../verifier/src/http/verify-answer.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ISSUER = 'https://bench.issuer.test';
const AUDIENCE = 'secret-gate-api';
const DURATION = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const DISTINCT = Number(process.env.BENCH_DISTINCT_TOKENS ?? 70_000);
/** Tokens the distinct row's one-second warm-up uses up (never measured). */
const WARM_UP_TOKENS = 15_000;
const RSS_TOKENS = 100_000;
const VERIFIER_MAIN = process.env.BENCH_VERIFIER_MAIN ?? 'verifier/dist/main.js';
const NODE_FLAGS: readonly string[] =
  process.env.BENCH_NODE_FLAGS === undefined
    ? VERIFIER_NODE_FLAGS
    : process.env.BENCH_NODE_FLAGS.split(' ').filter((flag) => flag.length > 0);
const SERVER_CPU = '0';
const LOAD_CPU = cpus().length > 1 ? '1' : '0';
const work = mkdtempSync(join(tmpdir(), 'bench-verifier-'));
const children: ChildProcess[] = [];

// Signing runs in worker threads (one per core) because RS256 signing is the slow part of setup.
const SIGNER = `
const { parentPort, workerData } = require('node:worker_threads');
const { createPrivateKey, sign } = require('node:crypto');
const { pem, alg, kid, from, to, now } = workerData;
const key = createPrivateKey(pem);
const b64 = (v) => Buffer.from(v).toString('base64url');
const header = b64(JSON.stringify({ alg, kid, typ: 'at+jwt' }));
const out = [];
for (let i = from; i < to; i++) {
  const payload = b64(JSON.stringify({ iss: '${ISSUER}', aud: '${AUDIENCE}', sub: 'user-' + i, azp: 'spa-demo',
    scope: 'openid secrets:read', iat: now, exp: now + 3600, jti: 'bench-' + i }));
  const input = header + '.' + payload;
  const signature = alg === 'RS256'
    ? sign('sha256', Buffer.from(input), key)
    : sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' });
  out.push(input + '.' + b64(signature));
}
parentPort.postMessage(out);
`;

async function mintMany(
  privateKey: KeyObject,
  alg: 'RS256' | 'ES256',
  kid: string,
  count: number,
): Promise<string[]> {
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' });
  const now = Math.floor(Date.now() / 1000);
  const workers = Math.max(1, cpus().length);
  const per = Math.ceil(count / workers);
  const parts = await Promise.all(
    Array.from(
      { length: workers },
      (_, w) =>
        new Promise<string[]>((resolve, reject) => {
          const worker = new Worker(SIGNER, {
            eval: true,
            workerData: { pem, alg, kid, from: w * per, to: Math.min(count, (w + 1) * per), now },
          });
          worker.once('message', resolve);
          worker.once('error', reject);
        }),
    ),
  );
  return parts.flat();
}

function startJwks(
  keys: Array<{ key: KeyObject; kid: string; alg: string }>,
): Promise<{ url: string; close: () => void }> {
  const body = JSON.stringify({
    keys: keys.map(({ key, kid, alg }) => ({
      ...key.export({ format: 'jwk' }),
      kid,
      alg,
      use: 'sig',
    })),
  });
  const server = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end(body),
  );
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      resolve({ url: `http://127.0.0.1:${port}/jwks`, close: () => server.close() });
    }),
  );
}

function startPinned(args: string[], env: Record<string, string> = {}): ChildProcess {
  const child = spawn('taskset', ['-c', SERVER_CPU, process.execPath, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  child.once('exit', (code, signal) => {
    if (!stopping.has(child))
      console.error(`server process exited unexpectedly (code ${code}, signal ${signal})`);
  });
  return child;
}

/** One GET on a fresh connection: a pooled keep-alive socket may have been idled out by the server meanwhile. */
function fetchText(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

async function waitReady(url: string): Promise<void> {
  for (let attempt = 0; attempt < 400; attempt++) {
    try {
      const { status } = await fetchText(url);
      if (status >= 200 && status < 300) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${url} never became ready`);
}

const stopping = new Set<ChildProcess>();

async function stop(child: ChildProcess): Promise<void> {
  stopping.add(child);
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** The benched verifier's variables, the same for the host process and the image. */
function benchedVerifierEnv(jwksUri: string, port: number): Record<string, string> {
  return {
    VERIFIER_ISSUER: ISSUER,
    VERIFIER_AUDIENCE: AUDIENCE,
    VERIFIER_JWKS_URI: jwksUri,
    VERIFIER_REQUIRED_SCOPES: 'secrets:read',
    VERIFIER_LISTEN: `127.0.0.1:${port}`,
    VERIFIER_LOG_LEVEL: 'warn',
    // wrk sends no X-SG-Client: every call would share the direct callers' one bucket.
    ...LOAD_TEST_VERIFIER_ENV,
  };
}

/**
 * The compiled verifier pinned to the server core. `nodeFlags` and `processEnv` default to the
 * runner's and the image's (VERIFIER_NODE_FLAGS, VERIFIER_PROCESS_ENV), so its rows measure what
 * is deployed, as `npm run bench` does; the RSS rows pass none and set them themselves.
 */
async function startVerifier(
  jwksUri: string,
  extra: Record<string, string> = {},
  nodeFlags: readonly string[] = NODE_FLAGS,
  processEnv: Readonly<Record<string, string>> = VERIFIER_PROCESS_ENV,
): Promise<{ child: ChildProcess; port: number }> {
  const port = await freePort();
  const child = startPinned([...nodeFlags, VERIFIER_MAIN], {
    ...processEnv,
    ...benchedVerifierEnv(jwksUri, port),
    ...extra,
  });
  await waitReady(`http://127.0.0.1:${port}/readyz`);
  return { child, port };
}

interface WrkResult {
  rate: number;
  requests: number;
  non2xx: number;
  /** Server CPU (user + system) per request, µs: robust when wrk, not the server, is the limit. */
  cpuPerRequest: number;
}

const CLOCK_TICKS_PER_SECOND = 100;

/**
 * What NGINX's /_verify location sends besides the token (snippets/verify-endpoint.conf; its empty
 * ones left out): every row with a token sends them, the bare 204 too, so the floor reads the
 * same request bytes as the verifier it is compared with.
 */
const NGINX_VERIFY_HEADERS = [
  'X-SG-Policy: default',
  'X-Original-URI: /secret',
  'X-Original-Method: GET',
  'X-SG-Client: 127.0.0.1',
];

/** utime + stime of a process, in µs (from /proc; Linux reports clock ticks of 10 ms). */
function cpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS_PER_SECOND;
}

function wrk(
  url: string,
  options: {
    token?: string;
    script?: string;
    /** Given to the script's `init` (the distinct scripts' first token index). */
    scriptArgs?: string[];
    seconds?: number;
    pid?: number;
  },
): WrkResult {
  const cpuBefore = options.pid === undefined ? 0 : cpuMicros(options.pid);
  const args = [
    '-c',
    LOAD_CPU,
    'wrk',
    '-t1',
    `-c${CONNECTIONS}`,
    `-d${options.seconds ?? DURATION}s`,
  ];
  if (options.token) {
    args.push('-H', `Authorization: Bearer ${options.token}`);
    for (const header of NGINX_VERIFY_HEADERS) args.push('-H', header);
  }
  if (options.script) args.push('-s', options.script);
  args.push(url);
  if (options.scriptArgs) args.push('--', ...options.scriptArgs);
  const run = spawnSync('taskset', args, { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`wrk failed: ${run.stderr}`);
  const rate = Number(/Requests\/sec:\s+([\d.]+)/.exec(run.stdout)?.[1] ?? NaN);
  const requests = Number(/(\d+) requests in/.exec(run.stdout)?.[1] ?? NaN);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(run.stdout)?.[1] ?? 0);
  const cpuPerRequest =
    options.pid === undefined ? NaN : (cpuMicros(options.pid) - cpuBefore) / requests;
  return { rate, requests, non2xx, cpuPerRequest };
}

/** NGINX_VERIFY_HEADERS as Lua table fields: the distinct rows send what NGINX sends, too. */
const NGINX_LUA_HEADERS = NGINX_VERIFY_HEADERS.map((header) => {
  const [name, value] = header.split(': ');
  return `, ["${name}"] = "${value}"`;
}).join('');

function distinctTokenScript(tokens: string[], path: string): string {
  const list = join(work, `${path.replace(/\W/g, '')}-tokens.txt`);
  writeFileSync(list, `${tokens.join('\n')}\n`);
  const script = join(work, `${path.replace(/\W/g, '')}.lua`);
  writeFileSync(
    script,
    `local tokens = {}
for line in io.lines("${list}") do tokens[#tokens + 1] = "Bearer " .. line end
local i = 0
init = function(args) i = tonumber(args[1] or "0") % #tokens end
request = function()
  i = i + 1
  if i > #tokens then i = 1 end
  return wrk.format("GET", "${path}", { ["Authorization"] = tokens[i]${NGINX_LUA_HEADERS} })
end
`,
  );
  return script;
}

/** Child mode: jose's jwtVerify over distinct tokens for `seconds`, printing verifications/s. */
async function joseLoop(tokensFile: string, jwkFile: string, seconds: number): Promise<void> {
  const { importJWK, jwtVerify } = await import('jose');
  const tokens = readFileSync(tokensFile, 'utf8').trim().split('\n');
  const key = await importJWK(JSON.parse(readFileSync(jwkFile, 'utf8')), 'RS256');
  const options = { issuer: ISSUER, audience: AUDIENCE, algorithms: ['RS256'] };
  for (let i = 0; i < 200; i++) await jwtVerify(tokens[i % tokens.length]!, key, options);
  const started = performance.now();
  const cpu = process.cpuUsage();
  let done = 0;
  while (performance.now() - started < seconds * 1000) {
    await jwtVerify(tokens[done % tokens.length]!, key, options);
    done++;
  }
  const used = process.cpuUsage(cpu);
  const rate = done / ((performance.now() - started) / 1000);
  process.stdout.write(`${rate.toFixed(0)} ${((used.user + used.system) / done).toFixed(1)}\n`);
}

/**
 * Child mode: the floor of a new token, node:crypto's one-shot RS256 `verify` with a prepared
 * KeyObject over the same tokens, each split into its signing input and signature beforehand (no
 * JWT work at all). Prints CPU µs per verification after a warm-up pass.
 */
function bareVerifyLoop(tokensFile: string, jwkFile: string, seconds: number): void {
  const key = createPublicKey({
    key: JSON.parse(readFileSync(jwkFile, 'utf8')) as JsonWebKey,
    format: 'jwk',
  });
  const parts = readFileSync(tokensFile, 'utf8')
    .trim()
    .split('\n')
    .map((token) => {
      const cut = token.lastIndexOf('.');
      return [Buffer.from(token.slice(0, cut)), Buffer.from(token.slice(cut + 1), 'base64url')];
    });
  const verifyAt = (i: number) => {
    const [input, signature] = parts[i % parts.length]!;
    if (!verify('sha256', input!, key, signature!)) throw new Error('a bench token did not verify');
  };
  for (let i = 0; i < 2000; i++) verifyAt(i);
  const started = performance.now();
  const cpu = process.cpuUsage();
  let done = 0;
  while (performance.now() - started < seconds * 1000) verifyAt(done++);
  const used = process.cpuUsage(cpu);
  process.stdout.write(`${((used.user + used.system) / done).toFixed(1)}\n`);
}

function vmHwmMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? NaN) / 1024;
}

const BARE_UWS = `
const uws = require('uWebSockets.js');
if (typeof uws.getParts !== 'function') { console.error('uWS native addon not loaded'); process.exit(1); }
uws.App().any('/*', (res) => { res.writeStatus('204 No Content').endWithoutBody(); })
  .listen('127.0.0.1', Number(process.env.PORT), (ok) => { if (!ok) process.exit(1); });
`;

/**
 * The transport work of a cached /verify and nothing else: where the ceiling's gap comes from. It
 * reads the headers the uWS transport reads for a bearer /verify and writes the three
 * headers of an allow as the verifier sends them (verify-answer.ts): the edge cache lifetime, the
 * client id and the set name — computed by the verifier's own function, so it cannot drift.
 */
const SAME_IO_CLIENT = 'spa-demo';
const SAME_IO_UWS = `
const uws = require('uWebSockets.js');
uws.App().any('/*', (res, req) => {
  const seen = [req.getHeader('authorization'), req.getHeader('x-sg-policy'),
    req.getHeader('x-original-uri'), req.getHeader('x-original-method'), req.getHeader('dpop'),
    req.getHeader('x-original-origin')];
  res.writeStatus('204 No Content').writeHeader('X-Accel-Expires', seen[0] ? '5' : '0')
    .writeHeader('X-Auth-Client', '${SAME_IO_CLIENT}')
    .writeHeader('X-Auth-Set', '${secretSetName(ISSUER, SAME_IO_CLIENT)}').endWithoutBody();
}).listen('127.0.0.1', Number(process.env.PORT), (ok) => { if (!ok) process.exit(1); });
`;

/** Runs one of the inline uWS servers pinned to the server core and measures it with `token`. */
async function measureInlineUws(source: string, token?: string): Promise<WrkResult> {
  const port = await freePort();
  const server = startPinned(['-e', source], {
    PORT: String(port),
    NODE_PATH: join(ROOT, 'node_modules'),
  });
  await waitReady(`http://127.0.0.1:${port}/`);
  const url = `http://127.0.0.1:${port}/verify`;
  wrk(url, { token, seconds: 1 }); // warm-up
  const result = wrk(url, { token, pid: server.pid! });
  await stop(server);
  return result;
}

async function main(): Promise<void> {
  const rows = new Set((process.env.BENCH_ROWS ?? 'runtimes,throughput,rss').split(','));
  // The compiled verifier, as deployed: no TypeScript loader in the measured process or its RSS.
  const build = spawnSync('npm', ['run', '--silent', 'build:verifier'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  if (build.status !== 0) throw new Error('npm run build:verifier failed');
  console.log(
    `verifier benchmark: wrk -t1 -c${CONNECTIONS} -d${DURATION}s, server on cpu ${SERVER_CPU}, wrk on cpu ${LOAD_CPU}, ` +
      `verifier rows run ${VERIFIER_MAIN} with ${NODE_FLAGS === VERIFIER_NODE_FLAGS ? 'the deployed' : 'these'} flags (${NODE_FLAGS.join(' ')})`,
  );
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwks = await startJwks([
    { key: rsa.publicKey, kid: 'bench-rsa', alg: 'RS256' },
    { key: ec.publicKey, kid: 'bench-ec', alg: 'ES256' },
  ]);
  const report: string[] = [];
  if (rows.has('runtimes')) report.push(runtimeTable(COMPARED_VERSIONS, VERIFIER_NODE_FLAGS), '');
  if (rows.has('throughput')) report.push(...(await throughputRows(rsa, jwks.url)));
  if (rows.has('revocation')) report.push(...(await revocationRows(rsa, jwks.url)));
  if (rows.has('rss')) report.push(...(await rssRows(ec.privateKey, jwks.url)));
  jwks.close();
  console.log(['', ...report].join('\n'));
}

async function throughputRows(
  rsa: { privateKey: KeyObject; publicKey: KeyObject },
  jwksUri: string,
): Promise<string[]> {
  process.stdout.write(`minting ${DISTINCT} RS256 tokens... `);
  const rsTokens = await mintMany(rsa.privateKey, 'RS256', 'bench-rsa', DISTINCT);
  console.log('done');

  // 1. ceiling, and the same I/O as a cached /verify without its logic
  // The floor is sent the same request as the cached row (the issue's "same request headers").
  const ceiling = await measureInlineUws(BARE_UWS, rsTokens[0]);
  const sameIo = await measureInlineUws(SAME_IO_UWS, rsTokens[0]);

  // 2 + 3. uWS verifier: cached, then distinct
  const uws = await startVerifier(jwksUri);
  const verifyUrl = `http://127.0.0.1:${uws.port}/verify`;
  wrk(verifyUrl, { token: rsTokens[0]!, seconds: 1 }); // warm-up
  const cached = wrk(verifyUrl, { token: rsTokens[0]!, pid: uws.child.pid! });
  // Warmed like jose's loop: the verification path runs for a second before it is measured.
  wrk(`http://127.0.0.1:${uws.port}`, {
    script: distinctTokenScript(rsTokens.slice(1, 1 + WARM_UP_TOKENS), '/verify?warm-up'),
    seconds: 1,
  });
  const measuredTokens = rsTokens.slice(1 + WARM_UP_TOKENS);
  const distinct = wrk(`http://127.0.0.1:${uws.port}`, {
    script: distinctTokenScript(measuredTokens, '/verify'),
    pid: uws.child.pid!,
  });
  await stop(uws.child);

  // 4. revocation on: the cached token checked against the watermarks of other signed-out users
  const revokedCached = await measureRevocationOn(jwksUri, rsa.privateKey, rsTokens[0]!);

  // 5. jose's own verify loop, then the bare verify of the measured tokens, same core
  const tokensFile = join(work, 'jose-tokens.txt');
  writeFileSync(tokensFile, rsTokens.join('\n'));
  const measuredFile = join(work, 'measured-tokens.txt');
  writeFileSync(measuredFile, measuredTokens.join('\n'));
  const jwkFile = join(work, 'rsa.jwk.json');
  writeFileSync(jwkFile, JSON.stringify(rsa.publicKey.export({ format: 'jwk' })));
  const [joseRate, joseCpu] = childLoop('--jose-loop', tokensFile, jwkFile) as [number, number];
  const [bareCpu] = childLoop('--bare-verify', measuredFile, jwkFile) as [number];

  const lines = [
    'row                               req/s  ratio   server CPU µs/req  ratio by CPU',
    `bare uWS 204 (ceiling)         ${fmt(ceiling.rate)}   1.00   ${us(ceiling.cpuPerRequest)}            1.00`,
    `uWS, same I/O as /verify       ${fmt(sameIo.rate)}  ${x(sameIo.rate, ceiling.rate)}   ${us(sameIo.cpuPerRequest)}           ${x(ceiling.cpuPerRequest, sameIo.cpuPerRequest)}  of ceiling: reads 6 headers, writes 3 headers`,
    `/verify cached, uWS            ${fmt(cached.rate)}  ${x(cached.rate, ceiling.rate)}   ${us(cached.cpuPerRequest)}           ${x(ceiling.cpuPerRequest, cached.cpuPerRequest)}  of ceiling (goal >= 0.85); ${x(sameIo.cpuPerRequest, cached.cpuPerRequest)} of same I/O`,
    revocationLine(ceiling, cached, revokedCached),
    `/verify distinct RS256, uWS    ${fmt(distinct.rate)}  ${x(distinct.rate, joseRate)}   ${us(distinct.cpuPerRequest)}           ${x(joseCpu, distinct.cpuPerRequest)}  of jose (goal >= 0.80)`,
    `jose jwtVerify loop            ${fmt(joseRate)}   1.00   ${us(joseCpu)}            1.00`,
    `bare crypto.verify RS256                         ${us(bareCpu)}                  the same tokens, in-process; /verify distinct = ${x(distinct.cpuPerRequest, bareCpu)} of it (goal <= 2.50)`,
  ];
  if (distinct.requests > measuredTokens.length) {
    // The script wraps round the pool: repeats are cache hits at a fraction of a verification's
    // cost, so the row's CPU per request would understate what a new token costs.
    const at = lines.findIndex((line) => line.startsWith('/verify distinct'));
    lines[at] += '  NOT A PER-TOKEN FIGURE (pool ran out)';
    lines.push(
      `note: ${distinct.requests} requests > ${measuredTokens.length} tokens: the rest were cache hits; raise BENCH_DISTINCT_TOKENS`,
    );
  }
  for (const [name, result] of Object.entries({ cached, distinct, revokedCached })) {
    if (result.non2xx > 0) lines.push(`warning: ${name} had ${result.non2xx} non-2xx answers`);
  }
  return lines;
}

/** One of this file's child modes pinned to the server core; its printed numbers. */
function childLoop(mode: '--jose-loop' | '--bare-verify', tokensFile: string, jwkFile: string) {
  const loop = spawnSync(
    'taskset',
    [
      '-c',
      SERVER_CPU,
      process.execPath,
      '--import',
      'tsx',
      fileURLToPath(import.meta.url),
      mode,
      tokensFile,
      jwkFile,
      String(DURATION),
    ],
    { cwd: ROOT, encoding: 'utf8' },
  );
  if (loop.status !== 0) throw new Error(`${mode} failed: ${loop.stderr}`);
  return loop.stdout.trim().split(' ').map(Number);
}

/** Users signed out (other than the measured token's) before the revocation-on row. */
const REVOKED_USERS = 1_000;

const fmt = (n: number, width = 8) => n.toFixed(0).padStart(width);
const us = (n: number) => n.toFixed(1).padStart(7);
const x = (a: number, b: number) => (a / b).toFixed(2).padStart(5);

function revocationLine(ceiling: WrkResult, cached: WrkResult, revoked: WrkResult): string {
  return `/verify cached, revocation on  ${fmt(revoked.rate)}  ${x(revoked.rate, ceiling.rate)}   ${us(revoked.cpuPerRequest)}           ${x(ceiling.cpuPerRequest, revoked.cpuPerRequest)}  of ceiling; ${x(cached.cpuPerRequest, revoked.cpuPerRequest)} of uWS cached (${REVOKED_USERS} watermarks)`;
}

/**
 * The cached `token` on a verifier with the back-channel logout receiver on, after
 * REVOKED_USERS other users signed out: the per-request revocation check, cache hits included.
 * Before it is measured, a token of a signed-out user issued before the logout must get 401, so
 * the row never times a store that does not act.
 */
async function measureRevocationOn(
  jwksUri: string,
  privateKey: KeyObject,
  token: string,
): Promise<WrkResult> {
  const revoking = await startVerifier(jwksUri, {
    VERIFIER_LOGOUT_AUDIENCES: 'spa-demo',
    // The 1,000 logouts below come from one sender as fast as it can: a budget they never reach.
    VERIFIER_REVOCATION_RECEIVER_RATE: '100000r/s',
    VERIFIER_REVOCATION_RECEIVER_BURST: '100000',
  });
  const now = Math.floor(Date.now() / 1000);
  const before = signRs256(privateKey, {
    iss: ISSUER,
    aud: AUDIENCE,
    sub: 'signed-out-0',
    azp: 'spa-demo',
    scope: 'openid secrets:read',
    iat: now - 60,
    exp: now + 3600,
    jti: randomUUID(),
  });
  await signOutOthers(revoking.port, privateKey, REVOKED_USERS);
  const url = `http://127.0.0.1:${revoking.port}/verify`;
  const refused = await fetch(url, { headers: { authorization: `Bearer ${before}` } });
  await refused.arrayBuffer();
  if (refused.status !== 401) {
    throw new Error(`a signed-out user's older token answered ${refused.status}, expected 401`);
  }
  wrk(url, { token, seconds: 1 });
  const result = wrk(url, { token, pid: revoking.child.pid! });
  await stop(revoking.child);
  return result;
}

/** `BENCH_ROWS=revocation`: the revocation-on row beside the rows it is read against only. */
async function revocationRows(
  rsa: { privateKey: KeyObject; publicKey: KeyObject },
  jwksUri: string,
): Promise<string[]> {
  const [token] = await mintMany(rsa.privateKey, 'RS256', 'bench-rsa', 1);
  const ceiling = await measureInlineUws(BARE_UWS, token);
  const uws = await startVerifier(jwksUri);
  const verifyUrl = `http://127.0.0.1:${uws.port}/verify`;
  wrk(verifyUrl, { token: token!, seconds: 1 }); // warm-up
  const cached = wrk(verifyUrl, { token: token!, pid: uws.child.pid! });
  await stop(uws.child);
  const revoked = await measureRevocationOn(jwksUri, rsa.privateKey, token!);
  const lines = [
    'row                               req/s  ratio   server CPU µs/req  ratio by CPU',
    `bare uWS 204 (ceiling)         ${fmt(ceiling.rate)}   1.00   ${us(ceiling.cpuPerRequest)}            1.00`,
    `/verify cached, uWS            ${fmt(cached.rate)}  ${x(cached.rate, ceiling.rate)}   ${us(cached.cpuPerRequest)}           ${x(ceiling.cpuPerRequest, cached.cpuPerRequest)}  of ceiling`,
    revocationLine(ceiling, cached, revoked),
  ];
  for (const [name, result] of Object.entries({ cached, revoked })) {
    if (result.non2xx > 0) lines.push(`warning: ${name} had ${result.non2xx} non-2xx answers`);
  }
  return lines;
}

/** A compact RS256 JWS of `payload` with the bench issuer's key. */
function signRs256(privateKey: KeyObject, payload: Record<string, unknown>): string {
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const input = `${b64({ alg: 'RS256', kid: 'bench-rsa', typ: 'at+jwt' })}.${b64(payload)}`;
  return `${input}.${sign('sha256', Buffer.from(input), privateKey).toString('base64url')}`;
}

/** Back-channel logouts for `count` other users, signed with the bench issuer's key. */
async function signOutOthers(port: number, privateKey: KeyObject, count: number): Promise<void> {
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const header = b64({ alg: 'RS256', kid: 'bench-rsa', typ: 'logout+jwt' });
  const now = Math.floor(Date.now() / 1000);
  for (let i = 0; i < count; i++) {
    const payload = b64({
      iss: ISSUER,
      aud: 'spa-demo',
      iat: now,
      jti: randomUUID(),
      sub: `signed-out-${i}`,
      events: { 'http://schemas.openid.net/event/backchannel-logout': {} },
    });
    const input = `${header}.${payload}`;
    const token = `${input}.${sign('sha256', Buffer.from(input), privateKey).toString('base64url')}`;
    const answer = await fetch(`http://127.0.0.1:${port}/backchannel-logout`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `logout_token=${token}`,
    });
    if (answer.status !== 200) throw new Error(`back-channel logout answered ${answer.status}`);
  }
}

/** Rounds of cached traffic over the whole set once the cache is full (5 s each). */
const CACHED_ROUNDS = 3;

/**
 * Fills the verifier's cache with the script's RSS_TOKENS distinct tokens, each round going on
 * where the last one stopped, then sends CACHED_ROUNDS rounds over the whole set: a full cache
 * under traffic, the state whose peak counts. The last metrics page and the entries it counts.
 */
async function fillCache(port: number, fill: string): Promise<{ filled: number; metrics: string }> {
  const url = `http://127.0.0.1:${port}`;
  const read = async () => {
    const metrics = (await fetchText(`${url}/metrics`)).body;
    return { filled: Number(/^verifier_cache_entries (\d+)/m.exec(metrics)?.[1] ?? 0), metrics };
  };
  let sent = 0;
  let state = await read();
  for (let round = 0; round < 40 && state.filled < RSS_TOKENS; round++) {
    sent += wrk(url, { script: fill, scriptArgs: [String(sent)], seconds: 5 }).requests;
    state = await read();
  }
  for (let round = 0; round < CACHED_ROUNDS; round++) {
    const from = Math.round((round * RSS_TOKENS) / CACHED_ROUNDS);
    wrk(url, { script: fill, scriptArgs: [String(from)], seconds: 5 });
  }
  return { filled: state.filled, metrics: (await read()).metrics };
}

async function rssRows(ecKey: KeyObject, jwksUri: string): Promise<string[]> {
  process.stdout.write(`minting ${RSS_TOKENS} ES256 tokens... `);
  const esTokens = await mintMany(ecKey, 'ES256', 'bench-ec', RSS_TOKENS);
  console.log('done');
  const fill = distinctTokenScript(esTokens, '/verify');
  const rows: string[] = [];
  // Node's defaults, then the deployed flags and allocator setting (verifier/README.md, "Memory").
  for (const deployed of [false, true]) {
    const verifier = await startVerifier(
      jwksUri,
      { VERIFIER_CACHE_MAX_ENTRIES: String(RSS_TOKENS), VERIFIER_CACHE_MAX_BYTES: '1g' },
      deployed ? NODE_FLAGS : [],
      deployed ? VERIFIER_PROCESS_ENV : {},
    );
    const { filled, metrics } = await fillCache(verifier.port, fill);
    const heapMb = (name: string) =>
      (
        Number(new RegExp(`^verifier_nodejs_${name} (\\S+)`, 'm').exec(metrics)?.[1]) /
        2 ** 20
      ).toFixed(1);
    const peak = vmHwmMb(verifier.child.pid!);
    await stop(verifier.child);
    rows.push(
      `peak RSS, ${filled} cached decisions, Node ${process.versions.node} ${
        deployed
          ? `${NODE_FLAGS.join(' ')} ${Object.entries(VERIFIER_PROCESS_ENV)
              .map(([name, value]) => `${name}=${value}`)
              .join(' ')}`
          : '(no flags)'
      }: ${peak.toFixed(1)} MB ` +
        `(heap used ${heapMb('heap_size_used_bytes')} of ${heapMb('heap_size_total_bytes')} MB; goal <= 128 MB)`,
    );
  }
  // The image sets its own flags (verifier/Dockerfile): a row of other flags is the host's only.
  rows.push(
    NODE_FLAGS === VERIFIER_NODE_FLAGS
      ? await imageRssRow(jwksUri, fill)
      : 'peak RSS in the verifier image: not measured (BENCH_NODE_FLAGS is set)',
  );
  return rows;
}

/**
 * The same fill against the verifier image (Node 24 with its addon, the image's own heap flags),
 * on the host's network so it reaches this JWKS; its peak read from /proc on the host.
 */
async function imageRssRow(jwksUri: string, fill: string): Promise<string> {
  const noEngine = await missingEngine();
  if (noEngine !== undefined) return `peak RSS in the verifier image: not measured (${noEngine})`;
  await buildImages(['verifier']);
  const port = await freePort();
  const id = await docker(
    'run',
    '-d',
    '--rm',
    '--network',
    'host',
    '--cpuset-cpus',
    SERVER_CPU,
    ...Object.entries({
      ...benchedVerifierEnv(jwksUri, port),
      VERIFIER_CACHE_MAX_ENTRIES: String(RSS_TOKENS),
      VERIFIER_CACHE_MAX_BYTES: '1g',
    }).flatMap(([name, value]) => ['-e', `${name}=${value}`]),
    IMAGES.verifier,
  );
  try {
    await waitReady(`http://127.0.0.1:${port}/readyz`);
    const node = await docker('exec', id, 'node', '--version');
    const { filled } = await fillCache(port, fill);
    const peak = vmHwmMb(Number(await docker('inspect', '--format', '{{.State.Pid}}', id)));
    return `peak RSS, ${filled} cached decisions, verifier image (${node}, its NODE_OPTIONS and MALLOC_ARENA_MAX): ${peak.toFixed(1)} MB (goal <= 128 MB)`;
  } finally {
    await docker('stop', id);
  }
}

if (process.argv[2] === '--jose-loop') {
  await joseLoop(process.argv[3]!, process.argv[4]!, Number(process.argv[5]));
} else if (process.argv[2] === '--bare-verify') {
  bareVerifyLoop(process.argv[3]!, process.argv[4]!, Number(process.argv[5]));
} else {
  try {
    await main();
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
    rmSync(work, { recursive: true, force: true });
  }
}

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
// (bench/runtimes.ts). After the throughput rows, the over-HTTP rows on Node 22 (host) and Node 24
// (the verifier image, whose addon the host cannot load) side by side (BENCH_ROWS=image,
// bench/verifier-image.ts): the ceiling, the same I/O, the cached and the all-distinct /verify and
// the bare `crypto.verify` of the same tokens, in BENCH_IMAGE_ROUNDS rounds.
// BENCH_ROWS=runtimes, BENCH_ROWS=throughput, BENCH_ROWS=rss, BENCH_ROWS=image or
// BENCH_ROWS=revocation (the ceiling, the cached row and the revocation-on row only) runs one part.
// BENCH_VERIFIER_MAIN runs another build's main.js in the verifier rows (a parent commit's, for
// an A/B in one sitting); BENCH_NODE_FLAGS replaces the deployed Node flags in them (space-separated).
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, get } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { freePort } from '../stack/ports.js';
import {
  startMeasuredProcess,
  waitUntilReady,
  type MeasuredProcess,
} from '../perf/measured-process.js';
import { processCpuMicros } from '../perf/process-stats.js';
import { benchedVerifierEnv } from '../perf/systems.js';
import { VERIFIER_NODE_FLAGS, VERIFIER_PROCESS_ENV } from '../stack/service-env.js';
import { COMPARED_VERSIONS, runtimeTable } from './runtimes.js';
import { BARE_UWS } from './bare-servers.js';
import { runWrkSync } from './wrk.js';
import { IMAGES, buildImages, docker, missingEngine } from '../test/containers/engine.js';
import {
  prepareVerifierImage,
  removeImageProcesses,
  runImageScript,
  startImageScript,
  startImageVerifier,
  type ImageProcess,
} from './verifier-image.js';
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
/** How long a server or image may take to answer its readiness URL. */
const READY_MS = 20_000;

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

/** Node and `args` pinned to the server core, ready once `readyUrl` answers 2xx. */
function startPinned(
  args: string[],
  env: Record<string, string>,
  readyUrl: string,
): Promise<MeasuredProcess> {
  return startMeasuredProcess({
    name: 'server process',
    command: process.execPath,
    args,
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    cpu: SERVER_CPU,
    ready: { url: readyUrl },
    readyTimeoutMs: READY_MS,
  });
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

/** The benched verifier's variables, the same for the host process and the image. */
const benchedVerifier = (jwksUri: string, port: number) =>
  benchedVerifierEnv({ issuer: ISSUER, audience: AUDIENCE, jwksUri, port });

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
): Promise<{ server: MeasuredProcess; port: number }> {
  const port = await freePort();
  const server = await startPinned(
    [...nodeFlags, VERIFIER_MAIN],
    { ...processEnv, ...benchedVerifier(jwksUri, port), ...extra },
    `http://127.0.0.1:${port}/readyz`,
  );
  return { server, port };
}

interface WrkResult {
  rate: number;
  requests: number;
  non2xx: number;
  /** Server CPU (user + system) per request, µs: robust when wrk, not the server, is the limit. */
  cpuPerRequest: number;
}

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

/** utime + stime of a process so far, in µs. */
function cpuMicros(pid: number): number {
  const { user, system } = processCpuMicros(pid);
  return user + system;
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
    /** The server's CPU µs so far, when it is not one host process (a container's cgroup). */
    cpu?: () => number;
  },
): WrkResult {
  const { pid } = options;
  const readCpu = options.cpu ?? (pid === undefined ? undefined : () => cpuMicros(pid));
  const cpuBefore = readCpu?.() ?? 0;
  const { rate, requests, non2xx } = runWrkSync({
    url,
    seconds: options.seconds ?? DURATION,
    connections: CONNECTIONS,
    cpu: LOAD_CPU,
    headers: options.token
      ? [`Authorization: Bearer ${options.token}`, ...NGINX_VERIFY_HEADERS]
      : [],
    ...(options.script === undefined ? {} : { script: options.script }),
    ...(options.scriptArgs === undefined ? {} : { scriptArgs: options.scriptArgs }),
  });
  const cpuPerRequest = readCpu === undefined ? NaN : (readCpu() - cpuBefore) / requests;
  return { rate, requests, non2xx, cpuPerRequest };
}

/** NGINX_VERIFY_HEADERS as Lua table fields: the distinct rows send what NGINX sends, too. */
const NGINX_LUA_HEADERS = NGINX_VERIFY_HEADERS.map((header) => {
  const [name, value] = header.split(': ');
  return `, ["${name}"] = "${value}"`;
}).join('');

/** The distinct row stopped when its tokens were answered (distinctTokenScript's `once`). */
const usedUp = (row: WrkResult, pool: number) => row.requests >= pool - CONNECTIONS;
const POOL_USED_UP =
  'the new-token pool was answered before the run ended: its req/s is over the whole run (a lower bound), its CPU per request holds; BENCH_DISTINCT_TOKENS makes the run longer';

/**
 * A wrk script sending `tokens` in turn from the index its `init` is given. With `once`, wrk stops
 * when all but CONNECTIONS are answered, so no token is sent twice: a repeat would be a cache hit,
 * and on a machine fast enough to use the pool up within the run the row would read the cached
 * path's CPU for a new token's (the row then simply lasts less than BENCH_SECONDS).
 */
function distinctTokenScript(tokens: string[], path: string, once = false): string {
  const list = join(work, `${path.replace(/\W/g, '')}-tokens.txt`);
  writeFileSync(list, `${tokens.join('\n')}\n`);
  const script = join(work, `${path.replace(/\W/g, '')}.lua`);
  const stop = once
    ? `local answered = 0
response = function()
  answered = answered + 1
  if answered >= #tokens - ${CONNECTIONS} then wrk.thread:stop() end
end
`
    : '';
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
${stop}`,
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

function vmHwmMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? NaN) / 1024;
}

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
  const server = await startPinned(
    ['-e', source],
    { PORT: String(port), NODE_PATH: join(ROOT, 'node_modules') },
    `http://127.0.0.1:${port}/`,
  );
  const url = `http://127.0.0.1:${port}/verify`;
  wrk(url, { token, seconds: 1 }); // warm-up
  const result = wrk(url, { token, pid: server.pid });
  await server.stop();
  return result;
}

async function main(): Promise<void> {
  const rows = new Set((process.env.BENCH_ROWS ?? 'runtimes,throughput,image,rss').split(','));
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
  if (rows.has('image')) report.push(...(await imageRows(rsa, jwks.url)));
  if (rows.has('revocation')) report.push(...(await revocationRows(rsa, jwks.url)));
  if (rows.has('rss')) report.push(...(await rssRows(ec.privateKey, jwks.url)));
  jwks.close();
  console.log(['', ...report].join('\n'));
}

async function throughputRows(
  rsa: { privateKey: KeyObject; publicKey: KeyObject },
  jwksUri: string,
): Promise<string[]> {
  const rsTokens = await distinctRsTokens(rsa.privateKey);

  // 1. ceiling, and the same I/O as a cached /verify without its logic
  // The floor is sent the same request as the cached row (the issue's "same request headers").
  const ceiling = await measureInlineUws(BARE_UWS, rsTokens[0]);
  const sameIo = await measureInlineUws(SAME_IO_UWS, rsTokens[0]);

  // 2 + 3. uWS verifier: cached, then distinct
  const uws = await startVerifier(jwksUri);
  const verifyUrl = `http://127.0.0.1:${uws.port}/verify`;
  wrk(verifyUrl, { token: rsTokens[0]!, seconds: 1 }); // warm-up
  const cached = wrk(verifyUrl, { token: rsTokens[0]!, pid: uws.server.pid });
  // Warmed like jose's loop: the verification path runs for a second before it is measured.
  wrk(`http://127.0.0.1:${uws.port}`, {
    script: distinctTokenScript(rsTokens.slice(1, 1 + WARM_UP_TOKENS), '/verify?warm-up'),
    seconds: 1,
  });
  const measuredTokens = rsTokens.slice(1 + WARM_UP_TOKENS);
  const distinct = wrk(`http://127.0.0.1:${uws.port}`, {
    script: distinctTokenScript(measuredTokens, '/verify', true),
    pid: uws.server.pid,
  });
  await uws.server.stop();

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
  const bareCpu = bareVerifyOnHost(measuredFile, jwkFile);

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
  if (usedUp(distinct, measuredTokens.length))
    lines.push(`note: ${POOL_USED_UP} (${distinct.requests} of ${measuredTokens.length} tokens)`);
  for (const [name, result] of Object.entries({ cached, distinct, revokedCached })) {
    if (result.non2xx > 0) lines.push(`warning: ${name} had ${result.non2xx} non-2xx answers`);
  }
  return lines;
}

let minted: Promise<string[]> | undefined;

/** DISTINCT RS256 tokens, minted once for every part that sends them (each verifier starts empty). */
function distinctRsTokens(privateKey: KeyObject): Promise<string[]> {
  minted ??= (async () => {
    process.stdout.write(`minting ${DISTINCT} RS256 tokens... `);
    const tokens = await mintMany(privateKey, 'RS256', 'bench-rsa', DISTINCT);
    console.log('done');
    return tokens;
  })();
  return minted;
}

/**
 * The bare `crypto.verify` of each token's signature, the key prepared and the tokens split into
 * Buffers before the clock: the runtime's own cost of the math. The last of three passes over the
 * tokens (the first ones tier V8 up), CPU µs per token. Arguments: the tokens file, the JWK file.
 */
const BARE_VERIFY = `
const { createPublicKey, verify } = require('node:crypto');
const { readFileSync } = require('node:fs');
const [tokensFile, jwkFile] = process.argv.slice(-2);
const key = createPublicKey({ key: JSON.parse(readFileSync(jwkFile, 'utf8')), format: 'jwk' });
const parts = readFileSync(tokensFile, 'utf8').trim().split('\\n').map((token) => {
  const dot = token.lastIndexOf('.');
  return [Buffer.from(token.slice(0, dot)), Buffer.from(token.slice(dot + 1), 'base64url')];
});
let used;
for (let pass = 0; pass < 3; pass++) {
  const start = process.cpuUsage();
  for (const [input, signature] of parts) {
    if (!verify('sha256', input, key, signature)) throw new Error('bad signature');
  }
  used = process.cpuUsage(start);
}
process.stdout.write(((used.user + used.system) / parts.length).toFixed(2) + '\\n');
`;

/** BARE_VERIFY on this host's Node, pinned to the server core: CPU µs per token. */
function bareVerifyOnHost(tokensFile: string, jwkFile: string): number {
  const bare = spawnSync(
    'taskset',
    ['-c', SERVER_CPU, process.execPath, '-e', BARE_VERIFY, tokensFile, jwkFile],
    { encoding: 'utf8' },
  );
  if (bare.status !== 0) throw new Error(`bare crypto.verify failed: ${bare.stderr}`);
  return Number(bare.stdout.trim());
}

/** One runtime's over-HTTP rows of the image part in one round. */
interface RuntimeRows {
  ceiling: WrkResult;
  sameIo: WrkResult;
  cached: WrkResult;
  distinct: WrkResult;
  /** CPU µs per token of the bare `crypto.verify` of the distinct row's tokens. */
  bareVerify: number;
}

/** Rounds of the image part; each figure is printed as the median of its rounds and their range. */
const IMAGE_ROUNDS = Number(process.env.BENCH_IMAGE_ROUNDS ?? 3);

/**
 * A running verifier's cached row (one token, after a second of warm-up) and its all-distinct
 * row (`measured` tokens, after a second over `warmUp` ones), its CPU read by `cpu`.
 */
function cachedAndDistinct(
  port: number,
  cpu: () => number,
  token: string,
  warmUp: string[],
  measured: string[],
): { cached: WrkResult; distinct: WrkResult } {
  const base = `http://127.0.0.1:${port}`;
  wrk(`${base}/verify`, { token, seconds: 1 });
  const cached = wrk(`${base}/verify`, { token, cpu });
  wrk(base, { script: distinctTokenScript(warmUp, '/verify?warm-up'), seconds: 1 });
  const distinct = wrk(base, { script: distinctTokenScript(measured, '/verify', true), cpu });
  return { cached, distinct };
}

/** Measures an image process the bench started: readiness, then `measure`, then it is removed. */
async function inImage<T>(
  started: Promise<ImageProcess>,
  readyUrl: string,
  measure: (cpu: () => number) => T,
): Promise<T> {
  const container = await started;
  try {
    await waitUntilReady(readyUrl, READY_MS);
    return measure(container.cpu);
  } finally {
    await container.stop();
  }
}

/** What one round of the image part measures with, the same in every round. */
interface ImageRound {
  jwksUri: string;
  token: string;
  warmUp: string[];
  measured: string[];
  /** The bare verify's inputs, by file name: the measured tokens and the public JWK. */
  files: Record<string, string>;
  /** Whether the image runs (an engine answered and it was built). */
  node24: boolean;
}

/**
 * One round: each kind of row on the host (Node 22), then in the image (Node 24), before the
 * next kind, so a change in the machine's load falls on both columns alike.
 */
async function imageRound(round: ImageRound): Promise<{ host: RuntimeRows; image?: RuntimeRows }> {
  const { jwksUri, token, warmUp, measured, files, node24 } = round;
  const host: Partial<RuntimeRows> = {};
  const inside: Partial<RuntimeRows> = {};

  // 1. the bare uWS 204 and the same I/O as a cached /verify, the same request as the cached row
  for (const [row, source] of [
    ['ceiling', BARE_UWS],
    ['sameIo', SAME_IO_UWS],
  ] as const) {
    host[row] = await measureInlineUws(source, token);
    if (!node24) continue;
    const port = await freePort();
    inside[row] = await inImage(
      startImageScript(SERVER_CPU, source, { PORT: String(port) }),
      `http://127.0.0.1:${port}/`,
      (cpu) => {
        wrk(`http://127.0.0.1:${port}/verify`, { token, seconds: 1 });
        return wrk(`http://127.0.0.1:${port}/verify`, { token, cpu });
      },
    );
  }

  // 2. the verifier: cached, then all-distinct (the deployed flags on the host, the image's own)
  const verifier = await startVerifier(jwksUri);
  Object.assign(
    host,
    cachedAndDistinct(verifier.port, () => cpuMicros(verifier.server.pid), token, warmUp, measured),
  );
  await verifier.server.stop();
  if (node24) {
    const port = await freePort();
    Object.assign(
      inside,
      await inImage(
        startImageVerifier(SERVER_CPU, benchedVerifier(jwksUri, port)),
        `http://127.0.0.1:${port}/readyz`,
        (cpu) => cachedAndDistinct(port, cpu, token, warmUp, measured),
      ),
    );
  }

  // 3. the bare crypto.verify of the distinct row's tokens, the same core
  host.bareVerify = bareVerifyOnHost(join(work, 'tokens.txt'), join(work, 'rsa.jwk.json'));
  if (node24) inside.bareVerify = Number(await runImageScript(SERVER_CPU, BARE_VERIFY, files));
  return { host: host as RuntimeRows, image: node24 ? (inside as RuntimeRows) : undefined };
}

/**
 * `BENCH_ROWS=image`: the over-HTTP rows on Node 22 (this host) and Node 24 (the verifier image,
 * whose addon needs glibc 2.38) in one run, so their ratios compare: the bare uWS 204, the same
 * I/O as a cached /verify, the cached and the all-distinct /verify, the bare `crypto.verify` of the
 * distinct row's tokens. Every server is pinned to SERVER_CPU (the container with --cpuset-cpus)
 * and wrk to LOAD_CPU; the container's CPU comes from its cgroup. The same tokens for both
 * runtimes and both verify rows (each verifier starts with an empty cache). IMAGE_ROUNDS rounds;
 * each ratio is taken within a round. Without a container engine the Node 24 column says why.
 */
async function imageRows(
  rsa: { privateKey: KeyObject; publicKey: KeyObject },
  jwksUri: string,
): Promise<string[]> {
  const load = loadavg();
  const tokens = await distinctRsTokens(rsa.privateKey);
  const measured = tokens.slice(1 + WARM_UP_TOKENS);
  const files = {
    'tokens.txt': `${measured.join('\n')}\n`,
    'rsa.jwk.json': JSON.stringify(rsa.publicKey.export({ format: 'jwk' })),
  };
  for (const [name, content] of Object.entries(files)) writeFileSync(join(work, name), content);
  const image = await prepareVerifierImage();
  const node24 = 'node' in image;
  const rounds: Array<{ host: RuntimeRows; image?: RuntimeRows }> = [];
  for (let round = 0; round < IMAGE_ROUNDS; round++) {
    process.stdout.write(`image part, round ${round + 1} of ${IMAGE_ROUNDS}\n`);
    rounds.push(
      await imageRound({
        jwksUri,
        token: tokens[0]!,
        warmUp: tokens.slice(1, 1 + WARM_UP_TOKENS),
        measured,
        files,
        node24,
      }),
    );
  }
  const after = loadavg();
  const runtime24 = node24
    ? `Node ${image.node.replace(/^v/, '')} (${IMAGES.verifier}, container CPU from its cgroup)`
    : `Node 24 (verifier image): not measured (${image.missing})`;
  return [
    `over HTTP, Node ${process.versions.node} (host) and ${runtime24}; ${new Date().toISOString()}, ` +
      `load average ${load[0]!.toFixed(1)} before, ${after[0]!.toFixed(1)} after; ` +
      `server CPU µs per request, median of ${IMAGE_ROUNDS} rounds [lowest–highest]`,
    ...sideBySideTable(rounds, measured.length),
  ];
}

/** The median of `values` and their range, as the image part prints every figure. */
function medianAndRange(values: number[], digits: number, unit = ''): string {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  const median =
    sorted.length % 2 === 1
      ? sorted[Math.floor(middle)]!
      : (sorted[middle - 1]! + sorted[middle]!) / 2;
  const range =
    sorted.length > 1 ? ` [${sorted[0]!.toFixed(digits)}–${sorted.at(-1)!.toFixed(digits)}]` : '';
  return `${median.toFixed(digits)}${unit}${range}`;
}

/** The image part's table: a row per figure, Node 22 (host) and Node 24 (image) side by side. */
function sideBySideTable(
  rounds: ReadonlyArray<{ host: RuntimeRows; image?: RuntimeRows }>,
  pool: number,
): string[] {
  const cell = (value: string) => value.padStart(28);
  const figures: Array<[string, (r: RuntimeRows) => number, number, string?]> = [
    ['bare uWS 204 (ceiling)', (r) => r.ceiling.cpuPerRequest, 1],
    ['uWS, same I/O as /verify', (r) => r.sameIo.cpuPerRequest, 1],
    ['/verify cached', (r) => r.cached.cpuPerRequest, 1],
    [
      '  ÷ bare 204 (goal <= 1.5×)',
      (r) => r.cached.cpuPerRequest / r.ceiling.cpuPerRequest,
      2,
      '×',
    ],
    [
      "  − same I/O (the verifier's work)",
      (r) => r.cached.cpuPerRequest - r.sameIo.cpuPerRequest,
      1,
    ],
    ['/verify, a new RS256 token each', (r) => r.distinct.cpuPerRequest, 1],
    ['bare crypto.verify, same tokens', (r) => r.bareVerify, 1],
    ['  ÷ bare verify (goal <= 2.5×)', (r) => r.distinct.cpuPerRequest / r.bareVerify, 2, '×'],
    ['  − bare verify', (r) => r.distinct.cpuPerRequest - r.bareVerify, 1],
    ['/verify cached, req/s', (r) => r.cached.rate, 0],
    ['/verify new token, req/s', (r) => r.distinct.rate, 0],
  ];
  const column = (
    side: 'host' | 'image',
    figure: (r: RuntimeRows) => number,
    digits: number,
    unit?: string,
  ) => {
    const values = rounds.flatMap((round) => (round[side] ? [figure(round[side])] : []));
    return values.length > 0 ? medianAndRange(values, digits, unit) : 'not measured';
  };
  const lines = [
    `${'row'.padEnd(34)}${cell('Node 22, host')}${cell('Node 24, image')}`,
    ...figures.map(
      ([name, figure, digits, unit]) =>
        `${name.padEnd(34)}${cell(column('host', figure, digits, unit))}${cell(column('image', figure, digits, unit))}`,
    ),
  ];
  rounds.forEach((round, index) => {
    for (const [runtime, rows] of Object.entries({
      'Node 22': round.host,
      'Node 24': round.image,
    })) {
      if (!rows) continue;
      for (const name of ['ceiling', 'sameIo', 'cached', 'distinct'] as const) {
        if (rows[name].non2xx > 0)
          lines.push(
            `warning: round ${index + 1}, ${runtime} ${name}: ${rows[name].non2xx} non-2xx answers`,
          );
      }
      if (usedUp(rows.distinct, pool))
        lines.push(`note: round ${index + 1}, ${runtime}: ${POOL_USED_UP}`);
    }
  });
  return lines;
}

/** One of this file's child modes pinned to the server core; its printed numbers. */
function childLoop(mode: '--jose-loop', tokensFile: string, jwkFile: string) {
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
  const result = wrk(url, { token, pid: revoking.server.pid });
  await revoking.server.stop();
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
  const cached = wrk(verifyUrl, { token: token!, pid: uws.server.pid });
  await uws.server.stop();
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
    const peak = vmHwmMb(verifier.server.pid);
    await verifier.server.stop();
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
      ...benchedVerifier(jwksUri, port),
      VERIFIER_CACHE_MAX_ENTRIES: String(RSS_TOKENS),
      VERIFIER_CACHE_MAX_BYTES: '1g',
    }).flatMap(([name, value]) => ['-e', `${name}=${value}`]),
    IMAGES.verifier,
  );
  try {
    await waitUntilReady(`http://127.0.0.1:${port}/readyz`, READY_MS);
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
} else {
  try {
    await main();
  } finally {
    await removeImageProcesses();
    rmSync(work, { recursive: true, force: true });
  }
}

// Verifier throughput, in one run so the ratios are comparable on a noisy machine:
//   ceiling    bare uWS handler answering 204
//   cached     /verify with one token (decision cache hit)
//   distinct   /verify with all-distinct RS256 tokens (full verification each time)
//   node:http  /verify cached, VERIFIER_TRANSPORT=node
//   jose       jwtVerify in a loop, in-process, no HTTP
// Servers run pinned to core 0 and wrk to core 1 (taskset), so one core serves, as in a sidecar.
// Last, peak RSS of a verifier holding 100,000 distinct cached decisions (ES256 tokens, because
// minting 100k RS256 tokens would dominate the run; the cache entry does not depend on `alg`).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, get } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { freePort } from '../stack/ports.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ISSUER = 'https://bench.issuer.test';
const AUDIENCE = 'secret-gate-api';
const DURATION = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const DISTINCT = Number(process.env.BENCH_DISTINCT_TOKENS ?? 40_000);
const RSS_TOKENS = 100_000;
const SERVER_CPU = '0';
const LOAD_CPU = cpus().length > 1 ? '1' : '0';
const work = mkdtempSync(join(tmpdir(), 'bench-verifier-'));
const children: ChildProcess[] = [];

const b64 = (value: Buffer | string) => Buffer.from(value).toString('base64url');

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
    if (!stopping.has(child)) console.error(`server process exited unexpectedly (code ${code}, signal ${signal})`);
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

async function startVerifier(
  jwksUri: string,
  extra: Record<string, string> = {},
): Promise<{ child: ChildProcess; port: number }> {
  const port = await freePort();
  const child = startPinned(['verifier/dist/main.js'], {
    VERIFIER_ISSUER: ISSUER,
    VERIFIER_AUDIENCE: AUDIENCE,
    VERIFIER_JWKS_URI: jwksUri,
    VERIFIER_REQUIRED_SCOPES: 'secrets:read',
    VERIFIER_LISTEN: `127.0.0.1:${port}`,
    VERIFIER_LOG_LEVEL: 'warn',
    ...extra,
  });
  await waitReady(`http://127.0.0.1:${port}/readyz`);
  return { child, port };
}

interface WrkResult {
  rate: number;
  requests: number;
  non2xx: number;
}

function wrk(
  url: string,
  options: { token?: string; script?: string; seconds?: number },
): WrkResult {
  const args = [
    '-c',
    LOAD_CPU,
    'wrk',
    '-t1',
    `-c${CONNECTIONS}`,
    `-d${options.seconds ?? DURATION}s`,
  ];
  if (options.token) args.push('-H', `Authorization: Bearer ${options.token}`);
  if (options.script) args.push('-s', options.script);
  args.push(url);
  const run = spawnSync('taskset', args, { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`wrk failed: ${run.stderr}`);
  const rate = Number(/Requests\/sec:\s+([\d.]+)/.exec(run.stdout)?.[1] ?? NaN);
  const requests = Number(/(\d+) requests in/.exec(run.stdout)?.[1] ?? NaN);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(run.stdout)?.[1] ?? 0);
  return { rate, requests, non2xx };
}

function distinctTokenScript(tokens: string[], path: string): string {
  const list = join(work, `${path.replace(/\W/g, '')}-tokens.txt`);
  writeFileSync(list, `${tokens.join('\n')}\n`);
  const script = join(work, `${path.replace(/\W/g, '')}.lua`);
  writeFileSync(
    script,
    `local tokens = {}
for line in io.lines("${list}") do tokens[#tokens + 1] = "Bearer " .. line end
local i = 0
request = function()
  i = i + 1
  if i > #tokens then i = 1 end
  return wrk.format("GET", "${path}", { ["Authorization"] = tokens[i] })
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
  let done = 0;
  while (performance.now() - started < seconds * 1000) {
    await jwtVerify(tokens[done % tokens.length]!, key, options);
    done++;
  }
  process.stdout.write(`${(done / ((performance.now() - started) / 1000)).toFixed(0)}\n`);
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

async function main(): Promise<void> {
  const fmt = (n: number) => n.toFixed(0).padStart(8);
  const ratio = (a: number, b: number) => (a / b).toFixed(2);
  console.log(
    `verifier benchmark: wrk -t1 -c${CONNECTIONS} -d${DURATION}s, server on cpu ${SERVER_CPU}, wrk on cpu ${LOAD_CPU}`,
  );

  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwks = await startJwks([
    { key: rsa.publicKey, kid: 'bench-rsa', alg: 'RS256' },
    { key: ec.publicKey, kid: 'bench-ec', alg: 'ES256' },
  ]);
  process.stdout.write(`minting ${DISTINCT} RS256 tokens... `);
  const rsTokens = await mintMany(rsa.privateKey, 'RS256', 'bench-rsa', DISTINCT);
  console.log('done');

  // 1. ceiling
  const barePort = await freePort();
  const bare = startPinned(['-e', BARE_UWS], {
    PORT: String(barePort),
    NODE_PATH: join(ROOT, 'node_modules'),
  });
  await waitReady(`http://127.0.0.1:${barePort}/`);
  const ceiling = wrk(`http://127.0.0.1:${barePort}/`, {});
  await stop(bare);

  // 2 + 3. uWS verifier: cached, then distinct
  const uwsVerifier = await startVerifier(jwks.url);
  const verifyUrl = `http://127.0.0.1:${uwsVerifier.port}/verify`;
  wrk(verifyUrl, { token: rsTokens[0]!, seconds: 1 }); // warm-up
  const cached = wrk(verifyUrl, { token: rsTokens[0]! });
  const distinct = wrk(`http://127.0.0.1:${uwsVerifier.port}`, {
    script: distinctTokenScript(rsTokens.slice(1), '/verify'),
  });
  await stop(uwsVerifier.child);

  // 4. node:http transport, cached
  const nodeVerifier = await startVerifier(jwks.url, { VERIFIER_TRANSPORT: 'node' });
  const nodeUrl = `http://127.0.0.1:${nodeVerifier.port}/verify`;
  wrk(nodeUrl, { token: rsTokens[0]!, seconds: 1 });
  const nodeCached = wrk(nodeUrl, { token: rsTokens[0]! });
  await stop(nodeVerifier.child);

  // 5. jose's own verify loop, same core
  const tokensFile = join(work, 'jose-tokens.txt');
  writeFileSync(tokensFile, rsTokens.join('\n'));
  const jwkFile = join(work, 'rsa.jwk.json');
  writeFileSync(jwkFile, JSON.stringify(rsa.publicKey.export({ format: 'jwk' })));
  const loop = spawnSync(
    'taskset',
    [
      '-c',
      SERVER_CPU,
      process.execPath,
      '--import',
      'tsx',
      fileURLToPath(import.meta.url),
      '--jose-loop',
      tokensFile,
      jwkFile,
      String(DURATION),
    ],
    { cwd: ROOT, encoding: 'utf8' },
  );
  const joseRate = Number(loop.stdout.trim());

  // 6. peak RSS with 100,000 distinct cached decisions
  process.stdout.write(`minting ${RSS_TOKENS} ES256 tokens... `);
  const esTokens = await mintMany(ec.privateKey, 'ES256', 'bench-ec', RSS_TOKENS);
  console.log('done');
  const rssVerifier = await startVerifier(jwks.url, {
    VERIFIER_CACHE_MAX_ENTRIES: String(RSS_TOKENS),
    VERIFIER_CACHE_MAX_BYTES: '1g',
  });
  const fill = distinctTokenScript(esTokens, '/verify');
  let filled = 0;
  for (let round = 0; round < 20 && filled < RSS_TOKENS; round++) {
    wrk(`http://127.0.0.1:${rssVerifier.port}`, { script: fill, seconds: 5 });
    const metrics = (await fetchText(`http://127.0.0.1:${rssVerifier.port}/metrics`)).body;
    filled = Number(/^verifier_cache_entries (\d+)/m.exec(metrics)?.[1] ?? 0);
  }
  const peakRss = vmHwmMb(rssVerifier.child.pid!);
  await stop(rssVerifier.child);
  jwks.close();

  console.log('');
  console.log('row                                   req/s    ratio');
  console.log(`bare uWS 204 (ceiling)             ${fmt(ceiling.rate)}     1.00`);
  console.log(
    `/verify cached, uWS                ${fmt(cached.rate)}     ${ratio(cached.rate, ceiling.rate)} of ceiling   (goal >= 0.85)`,
  );
  console.log(
    `/verify cached, node:http          ${fmt(nodeCached.rate)}     ${ratio(nodeCached.rate, ceiling.rate)} of ceiling, ${ratio(nodeCached.rate, cached.rate)} of uWS cached`,
  );
  console.log(
    `/verify distinct RS256, uWS        ${fmt(distinct.rate)}     ${ratio(distinct.rate, joseRate)} of jose   (goal >= 0.80)`,
  );
  console.log(`jose jwtVerify loop (in-process)   ${fmt(joseRate)}     1.00`);
  console.log(
    `peak RSS with ${filled} cached decisions: ${peakRss.toFixed(1)} MB   (goal <= 128 MB)`,
  );
  if (distinct.requests > DISTINCT - 1) {
    console.log(
      `note: ${distinct.requests} requests > ${DISTINCT - 1} tokens, some distinct-token requests were cache hits; raise BENCH_DISTINCT_TOKENS`,
    );
  }
  for (const [name, result] of Object.entries({ ceiling, cached, distinct, nodeCached })) {
    if (name !== 'ceiling' && result.non2xx > 0)
      console.log(`warning: ${name} had ${result.non2xx} non-2xx answers`);
  }
}

if (process.argv[2] === '--jose-loop') {
  await joseLoop(process.argv[3]!, process.argv[4]!, Number(process.argv[5]));
} else {
  try {
    await main();
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
    rmSync(work, { recursive: true, force: true });
  }
}

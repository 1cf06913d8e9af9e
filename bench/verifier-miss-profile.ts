// The deployed verifier (verifier/dist/main.js with VERIFIER_NODE_FLAGS, pinned to core 0) under
// all-distinct RS256 tokens carrying NGINX's /_verify headers (wrk on core 1): CPU per new token
// by thread (user and kernel, from /proc), young-generation collections per 1,000 tokens and their
// pauses (a `gc` PerformanceObserver preloaded into the process). With BENCH_PERF=1 the measured
// window is also recorded by `perf record -e cpu-clock -g` (with --perf-basic-prof) into
// BENCH_PERF_OUT (default perf.data here), for `perf report --sort dso,sym`.
//   npm run build:verifier && node --import tsx bench/verifier-miss-profile.ts
// BENCH_TOKENS (32,000), BENCH_WARM_SECONDS (4), BENCH_SECONDS (3), BENCH_NODE_FLAGS as in
// bench/verifier.ts. docs/performance.md, "The miss path in the deployed process, profiled".
import { spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LOAD_TEST_VERIFIER_ENV } from '../perf/systems.js';
import { freePort } from '../stack/ports.js';
import { VERIFIER_NODE_FLAGS, VERIFIER_PROCESS_ENV } from '../stack/service-env.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ISSUER = 'https://bench.issuer.test';
const TOKENS = Number(process.env.BENCH_TOKENS ?? 32_000);
const WARM_TOKENS = Math.floor(TOKENS * 0.45);
const flags = process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? [...VERIFIER_NODE_FLAGS];
const perfOut = process.env.BENCH_PERF === '1' ? (process.env.BENCH_PERF_OUT ?? 'perf.data') : '';
const work = mkdtempSync(join(tmpdir(), 'miss-profile-'));

/** Counts collections by kind; prints them with the process CPU on SIGUSR2. */
const GC_PRELOAD = `const { PerformanceObserver, constants } = require('node:perf_hooks');
let minor = 0, major = 0, pausedMs = 0;
new PerformanceObserver((list) => { for (const entry of list.getEntries()) {
  if (entry.detail.kind === constants.NODE_PERFORMANCE_GC_MINOR) minor++; else major++;
  pausedMs += entry.duration; } }).observe({ entryTypes: ['gc'] });
process.on('SIGUSR2', () => process.stderr.write('GC ' + JSON.stringify({ minor, major, pausedMs }) + '\\n'));`;

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const b64 = (value: string | Buffer) => Buffer.from(value).toString('base64url');
const header = b64(JSON.stringify({ alg: 'RS256', kid: 'bench', typ: 'at+jwt' }));
const now = Math.floor(Date.now() / 1000);
const tokens = Array.from({ length: TOKENS }, (_, i) => {
  const claims = { iss: ISSUER, aud: 'secret-gate-api', sub: `user-${i}`, azp: 'spa-demo' };
  const payload = { ...claims, scope: 'openid secrets:read', iat: now, exp: now + 3600 };
  const input = `${header}.${b64(JSON.stringify({ ...payload, jti: `bench-${i}` }))}`;
  return `${input}.${b64(sign('sha256', Buffer.from(input), privateKey))}`;
});
const jwk = { ...publicKey.export({ format: 'jwk' }), kid: 'bench', alg: 'RS256', use: 'sig' };
const jwks = createServer((_request, response) =>
  response
    .writeHead(200, { 'content-type': 'application/json' })
    .end(JSON.stringify({ keys: [jwk] })),
);
await new Promise<void>((done) => jwks.listen(0, '127.0.0.1', done));
const jwksUri = `http://127.0.0.1:${(jwks.address() as { port: number }).port}/jwks`;

/** A wrk script sending each of `list` once (then round again) as NGINX's /_verify would. */
function script(list: string[], name: string): string {
  writeFileSync(join(work, `${name}.txt`), `${list.join('\n')}\n`);
  writeFileSync(
    join(work, `${name}.lua`),
    `local t = {}
for line in io.lines("${join(work, `${name}.txt`)}") do t[#t + 1] = "Bearer " .. line end
local i = 0
request = function()
  i = i + 1
  if i > #t then i = 1 end
  return wrk.format("GET", "/verify", { ["Authorization"] = t[i], ["X-SG-Policy"] = "default",
    ["X-Original-URI"] = "/secret", ["X-Original-Method"] = "GET", ["X-SG-Client"] = "127.0.0.1" })
end`,
  );
  return join(work, `${name}.lua`);
}

const port = await freePort();
writeFileSync(join(work, 'gc.cjs'), GC_PRELOAD);
const extra = perfOut ? ['--perf-basic-prof'] : [];
const child = spawn(
  'taskset',
  [
    '-c',
    '0',
    process.execPath,
    ...flags,
    ...extra,
    '--require',
    join(work, 'gc.cjs'),
    'verifier/dist/main.js',
  ],
  {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      ...VERIFIER_PROCESS_ENV,
      VERIFIER_ISSUER: ISSUER,
      VERIFIER_AUDIENCE: 'secret-gate-api',
      VERIFIER_JWKS_URI: jwksUri,
      VERIFIER_REQUIRED_SCOPES: 'secrets:read',
      VERIFIER_LISTEN: `127.0.0.1:${port}`,
      VERIFIER_LOG_LEVEL: 'error',
      ...LOAD_TEST_VERIFIER_ENV,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  },
);
const gcLines: string[] = [];
child.stderr.on('data', (chunk: Buffer) => {
  for (const line of chunk.toString().split('\n'))
    if (line.startsWith('GC ')) gcLines.push(line.slice(3));
});
for (let attempt = 0; attempt < 200; attempt++) {
  const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
    (r) => r.ok,
    () => false,
  );
  if (ready) break;
  await new Promise((done) => setTimeout(done, 50));
}

function wrk(lua: string, seconds: number): number {
  const run = spawnSync(
    'taskset',
    ['-c', '1', 'wrk', '-t1', '-c8', `-d${seconds}s`, '-s', lua, `http://127.0.0.1:${port}`],
    { encoding: 'utf8' },
  );
  if (run.status !== 0) throw new Error(`wrk failed: ${run.stderr}`);
  return Number(/(\d+) requests in/.exec(run.stdout)?.[1]);
}
/** Each thread's user and kernel CPU in µs, by thread name. */
function threadCpu(): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${child.pid}/task`)) {
    const stat = readFileSync(`/proc/${child.pid}/task/${tid}/stat`, 'utf8');
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    for (const [kind, at] of [
      ['user', 11],
      ['kernel', 12],
    ] as const)
      out.set(`${name} ${kind}`, (out.get(`${name} ${kind}`) ?? 0) + Number(fields[at]) * 10_000);
  }
  return out;
}
const gcSnapshot = async () => {
  child.kill('SIGUSR2');
  await new Promise((done) => setTimeout(done, 300));
  return JSON.parse(gcLines.at(-1)!) as { minor: number; major: number; pausedMs: number };
};

wrk(script(tokens.slice(0, WARM_TOKENS), 'warm'), Number(process.env.BENCH_WARM_SECONDS ?? 4));
const gcBefore = await gcSnapshot();
const cpuBefore = threadCpu();
const perf = perfOut
  ? spawn(
      'perf',
      ['record', '-e', 'cpu-clock', '-F', '4999', '-g', '-o', perfOut, '-p', String(child.pid)],
      { stdio: 'ignore' },
    )
  : undefined;
const measured = tokens.slice(WARM_TOKENS);
const requests = wrk(script(measured, 'measured'), Number(process.env.BENCH_SECONDS ?? 3));
const cpuAfter = threadCpu();
if (perf) {
  perf.kill('SIGINT');
  await new Promise((done) => perf.once('exit', done));
}
const gcAfter = await gcSnapshot();
const perToken = (value: number) => (value / requests).toFixed(1);
const byThread = [...cpuAfter]
  .map(([name, value]) => [name, value - (cpuBefore.get(name) ?? 0)] as const)
  .filter(([, value]) => value > 0);
const total = byThread.reduce((sum, [, value]) => sum + value, 0);
console.log(
  `${requests} requests over ${measured.length} new tokens${requests > measured.length ? ' (POOL RAN OUT: repeats were cache hits)' : ''}, Node ${process.versions.node}, ${flags.join(' ')}`,
);
console.log(
  `CPU per new token ${perToken(total)} µs: ${byThread.map(([name, value]) => `${name} ${perToken(value)}`).join(', ')}`,
);
console.log(
  `young-generation collections ${(((gcAfter.minor - gcBefore.minor) * 1000) / requests).toFixed(1)} per 1,000 tokens, ` +
    `full ${gcAfter.major - gcBefore.major}; GC pauses ${perToken((gcAfter.pausedMs - gcBefore.pausedMs) * 1000)} µs per token`,
);
if (perf)
  console.log(
    `perf samples in ${perfOut}: perf report -i ${perfOut} --no-children --sort dso,sym -g none`,
  );
child.kill('SIGTERM');
await new Promise((done) => child.once('exit', done));
jwks.close();
rmSync(work, { recursive: true, force: true });

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
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startMeasuredProcess } from '../perf/measured-process.js';
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

const ROOT = fileURLToPath(new URL('..', import.meta.url));
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

const { tokens, jwk } = mintRs256Tokens(TOKENS);
const jwks = await serveJwks(jwk);

const script = (list: readonly string[], name: string) => verifyScript(work, list, name);

const port = await freePort();
writeFileSync(join(work, 'gc.cjs'), GC_PRELOAD);
const extra = perfOut ? ['--perf-basic-prof'] : [];
const gcLines: string[] = [];
const child = await startMeasuredProcess({
  name: 'verifier',
  command: process.execPath,
  args: [...flags, ...extra, '--require', join(work, 'gc.cjs'), 'verifier/dist/main.js'],
  cwd: ROOT,
  env: {
    PATH: process.env.PATH ?? '',
    ...VERIFIER_PROCESS_ENV,
    ...benchedVerifierEnv({
      issuer: BENCH_ISSUER,
      audience: BENCH_AUDIENCE,
      jwksUri: jwks.uri,
      port,
      logLevel: 'error',
    }),
  },
  cpu: '0',
  ready: { url: `http://127.0.0.1:${port}/readyz` },
  readyTimeoutMs: 10_000,
  stderr: (text) => {
    for (const line of text.split('\n')) if (line.startsWith('GC ')) gcLines.push(line.slice(3));
  },
});

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
  process.kill(child.pid, 'SIGUSR2');
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
await child.stop();
jwks.close();
rmSync(work, { recursive: true, force: true });

// `npm run stress:default-stack`: the default stack (`npm start`'s settings, rate limits included)
// under two loads, one after the other, with the verifier's CPU measured during each:
// 1. the study's load as a new user writes it (locust HttpUser, 2500 users, spawn 50/s, ONE shared
//    token, /hello:/secret = 1:2, 0-1 s waits): the goal is 0 failures;
// 2. one address flooding random well-formed tokens with wrk: the verifier's per-client call
//    limit (VERIFIER_VERIFY_RATE) must hold the verifier to a bounded CPU share.
// Options: --duration SECONDS (each load, default 120), --flood-connections N (default 64).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runWrk } from '../perf/wrk.js';
import { startStack } from '../stack/start-stack.js';
import { createUsageSampler } from '../perf/process-stats.js';

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  const value = at >= 0 ? Number(process.argv[at + 1]) : fallback;
  if (!Number.isFinite(value) || value <= 0)
    throw new TypeError(`${name} must be a positive number`);
  return value;
}

function runLocust(host: string, token: string, seconds: number, csv: string): Promise<number> {
  const args = [
    '-m',
    'locust',
    '-f',
    join(import.meta.dirname, 'study-user.py'),
    '--headless',
    '-u',
    '2500',
    '-r',
    '50',
    '-t',
    `${seconds}s`,
    '--host',
    host,
    '--csv',
    csv,
    '--only-summary',
  ];
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/python3', args, {
      env: { ...process.env, SG_STUDY_TOKEN: token },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    child.on('error', reject);
    child.on('exit', (code) => resolve(code ?? 1));
  });
}

/** The Aggregated row of locust's stats CSV: requests, failures, p99 (ms), requests/s. */
function aggregated(csv: string) {
  const [header, ...rows] = readFileSync(`${csv}_stats.csv`, 'utf8').trim().split('\n');
  const names = header!.split(',');
  const row = rows.find((line) => line.includes('Aggregated'))!.split(',');
  const col = (name: string) => Number(row[names.indexOf(name)]);
  return {
    requests: col('Request Count'),
    failures: col('Failure Count'),
    p99Ms: col('99%'),
    rps: col('Requests/s'),
  };
}

/** The verifier's own count of /verify answers. */
async function verifierDecisions(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith('verifier_decisions_total'))
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

const randomToken = () =>
  `eyJhbGciOiJSUzI1NiJ9.${randomBytes(24).toString('base64url')}.${randomBytes(32).toString('base64url')}`;

async function main(): Promise<void> {
  const seconds = option('--duration', 120);
  const connections = option('--flood-connections', 64);
  const dir = mkdtempSync(join(tmpdir(), 'sg-default-stack-'));
  const stack = await startStack();
  try {
    const verifierPid = stack.pid('verifier')!;
    const nginxPid = stack.pid('nginx')!;
    const token = await stack.mintToken({ expiresIn: seconds * 3 + 600 });
    const study = createUsageSampler(
      new Map([
        ['verifier', [verifierPid]],
        ['nginx', [nginxPid]],
      ]),
    );
    const code = await runLocust(stack.urls.gate, token, seconds, join(dir, 'study'));
    const studyCpu = study.stop();
    const load = aggregated(join(dir, 'study'));
    console.log(
      `study load (locust HttpUser, 2500 users, spawn 50/s, one token, ${seconds} s, exit ${code}): ` +
        `${load.requests} requests, ${load.failures} failures, ${load.rps.toFixed(0)} req/s, p99 ${load.p99Ms} ms; ` +
        studyCpu
          .map((u) => `${u.name} ${((u.cpuSeconds / seconds) * 100).toFixed(1)} % of a core`)
          .join(', '),
    );

    const tokenFile = join(dir, 'random-tokens.txt');
    writeFileSync(tokenFile, `${Array.from({ length: 20_000 }, randomToken).join('\n')}\n`);
    const decisionsBefore = await verifierDecisions(stack.urls.verifier);
    const flood = createUsageSampler(
      new Map([
        ['verifier', [verifierPid]],
        ['nginx', [nginxPid]],
      ]),
    );
    const result = await runWrk({
      url: stack.urls.secret,
      durationSeconds: seconds,
      connections,
      cpus: '0',
      tokenFile,
    });
    const floodCpu = flood.stop();
    const verified = (await verifierDecisions(stack.urls.verifier)) - decisionsBefore;
    console.log(
      `random-token flood (wrk, one address, ${connections} connections, ${seconds} s): ` +
        `${result.rps.toFixed(0)} req/s answered, ${(verified / seconds).toFixed(0)} verifier calls/s; ` +
        floodCpu
          .map((u) => `${u.name} ${((u.cpuSeconds / seconds) * 100).toFixed(1)} % of a core`)
          .join(', '),
    );
  } finally {
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();

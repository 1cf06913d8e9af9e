// The two counters behind perf/nginx-counts.ts: NGINX as a single process under callgrind (zeroed
// and dumped with callgrind_control around the requests of a row), and strace attached to a
// worker for the system calls of a row. Both only ever signal the processes they started.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseCallgrindTotals, parseStraceSummary } from './nginx-counts.js';

const run = promisify(execFile);

export interface SingleNginxSpec {
  readonly binary: string;
  /** The stack's rendered configuration and prefix (the same files its NGINX runs). */
  readonly prefix: string;
  readonly confFile: string;
  readonly env: Readonly<Record<string, string>>;
  /** Callgrind's dumps and NGINX's stderr go here. */
  readonly outDir: string;
  /** Answers once NGINX serves (e.g. `/hello`). */
  readonly readyUrl: string;
  readonly readyTimeoutMs?: number;
}

export interface CallgrindNginx {
  readonly pid: number;
  /** Zeroes the counters (callgrind_control --zero). */
  zero(): Promise<void>;
  /** Instructions since the last zero or dump (callgrind_control --dump), read from the dump. */
  dump(label: string): Promise<number>;
  stop(): Promise<void>;
}

/**
 * The configuration's NGINX as one process (`daemon off; master_process off;`) under callgrind.
 * One process, so every instruction of a request is in one dump: no master, no worker hand-off.
 */
export async function startCallgrindNginx(spec: SingleNginxSpec): Promise<CallgrindNginx> {
  const log = openSync(join(spec.outDir, 'callgrind-nginx.log'), 'a');
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      `--callgrind-out-file=${join(spec.outDir, 'callgrind.out')}`,
      spec.binary,
      ...['-p', spec.prefix, '-c', spec.confFile, '-e', 'stderr'],
      ...['-g', 'daemon off; master_process off;'],
    ],
    {
      cwd: spec.prefix,
      env: { PATH: process.env.PATH ?? '', ...spec.env },
      stdio: ['ignore', log, log],
    },
  );
  closeSync(log);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = () => stopChild(child, exited);
  try {
    await waitServing(spec.readyUrl, child, spec.readyTimeoutMs ?? 60_000);
  } catch (error) {
    await stop();
    throw error;
  }
  const pid = child.pid!;
  return {
    pid,
    zero: () => callgrindZero(pid),
    dump: (label) => callgrindDump(pid, spec.outDir, label),
    stop,
  };
}

/** Zeroes the counters of a process under callgrind. */
export const callgrindZero = (pid: number) => control(pid, '--zero');

/**
 * Instructions of a process under callgrind (whose `--callgrind-out-file` is in `outDir`) since
 * its last zero or dump, from a dump labelled `label`.
 */
export async function callgrindDump(pid: number, outDir: string, label: string): Promise<number> {
  await control(pid, `--dump=${label}`);
  return parseCallgrindTotals(readFileSync(dumpFile(outDir, label), 'utf8'));
}

/** callgrind_control exits 0 even when it found no such process: its "OK." is the answer. */
async function control(pid: number, action: string): Promise<void> {
  const { stdout, stderr } = await run('callgrind_control', [action, String(pid)]);
  if (!/\bOK\./.test(stdout)) {
    throw new Error(`callgrind_control ${action} ${pid} failed: ${(stdout + stderr).trim()}`);
  }
}

/** The dump whose trigger names `label` (callgrind numbers dumps `callgrind.out.N`). */
function dumpFile(dir: string, label: string): string {
  for (const name of readdirSync(dir)) {
    if (!/^callgrind\.out\.\d+$/.test(name)) continue;
    const path = join(dir, name);
    if (readFileSync(path, 'utf8').includes(`\ndesc: Trigger: dump ${label}\n`)) return path;
  }
  throw new Error(`callgrind wrote no dump "${label}" in ${dir}`);
}

async function waitServing(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`NGINX under callgrind exited (${child.exitCode})`);
    try {
      const reply = await fetch(url, { signal: AbortSignal.timeout(2000) });
      await reply.arrayBuffer();
      return;
    } catch {
      await sleep(200);
    }
  }
  throw new Error(`NGINX under callgrind did not serve ${url} within ${timeoutMs} ms`);
}

async function stopChild(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  // SIGQUIT: NGINX's graceful shutdown; callgrind then writes its final dump.
  child.kill('SIGQUIT');
  const done = await Promise.race([exited.then(() => true), sleep(10_000).then(() => false)]);
  if (!done) {
    child.kill('SIGKILL');
    await exited;
  }
}

/**
 * System calls of process `pid` (and its threads) while `body` runs: `strace -c -f -p`, started
 * and attached before `body`, interrupted after it so it writes its summary.
 */
export async function countSyscalls(
  pid: number,
  summaryFile: string,
  body: () => Promise<void>,
): Promise<Map<string, number>> {
  const strace = spawn('strace', ['-c', '-f', '-p', String(pid), '-o', summaryFile], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve, reject) => {
    strace.once('error', reject);
    strace.once('exit', (code) => resolve(code));
  });
  let stderr = '';
  await new Promise<void>((resolve, reject) => {
    strace.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (stderr.includes('attached')) resolve();
    });
    void exited.then(() => reject(new Error(`strace did not attach to ${pid}: ${stderr.trim()}`)));
  });
  try {
    await body();
  } finally {
    strace.kill('SIGINT');
    await exited;
  }
  return parseStraceSummary(readFileSync(summaryFile, 'utf8'));
}

// The two counters behind perf/nginx-counts.ts: NGINX as a single process under callgrind (zeroed
// and dumped with callgrind_control around the requests of a row), and strace attached to a
// worker for the system calls of a row. Both only ever signal the processes they started.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startMeasuredProcess } from './measured-process.js';
import { parseStraceSummary } from './nginx-counts.js';

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
export function startCallgrindNginx(spec: SingleNginxSpec): Promise<CallgrindNginx> {
  return startMeasuredProcess({
    name: 'NGINX under callgrind',
    command: spec.binary,
    args: [
      ...['-p', spec.prefix, '-c', spec.confFile, '-e', 'stderr'],
      ...['-g', 'daemon off; master_process off;'],
    ],
    cwd: spec.prefix,
    env: { PATH: process.env.PATH ?? '', ...spec.env },
    callgrind: { dir: spec.outDir, jit: false },
    logFile: join(spec.outDir, 'callgrind-nginx.log'),
    ready: { url: spec.readyUrl },
    readyTimeoutMs: spec.readyTimeoutMs ?? 60_000,
    // NGINX's graceful shutdown; callgrind then writes its final dump.
    stopSignal: 'SIGQUIT',
  });
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

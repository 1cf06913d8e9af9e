// Starts one process of a system under test with its limits, its output in a log file, and a
// readiness wait; stops it with SIGTERM and, if it lingers, SIGKILL — by its own PID only.
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Command, Confinement } from './limits.js';

export interface ServiceSpec {
  /** Short name used for the cgroup, the log file and the report (`nginx`, `verifier`, …). */
  readonly name: string;
  readonly command: Command;
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /** Under the profile's limits (a gate) or only pinned to the service core (support, e.g. an IdP). */
  readonly limited: boolean;
  /** URL answering any HTTP status once the service is ready. */
  readonly readyUrl: string;
  readonly logFile: string;
}

export interface RunningService {
  readonly name: string;
  readonly pid: number;
  readonly limited: boolean;
  stop(): Promise<void>;
}

export async function startService(
  spec: ServiceSpec,
  confinement: Confinement,
): Promise<RunningService> {
  const wrapped = confinement.wrap(spec.name, spec.command, spec.limited);
  const log = openSync(spec.logFile, 'a');
  const child = spawn(wrapped.command, [...wrapped.args], {
    cwd: spec.cwd,
    env: { ...process.env, ...spec.env },
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    await waitReady(spec.readyUrl, child, spec.name, spec.logFile);
  } catch (error) {
    await stopChild(child, exited);
    throw error;
  }
  const pid = child.pid;
  if (pid === undefined) throw new Error(`"${spec.name}" did not start`);
  return { name: spec.name, pid, limited: spec.limited, stop: () => stopChild(child, exited) };
}

/** Polls `url` until it answers at all; fails early if the process exits. */
export async function waitReady(
  url: string,
  child: ChildProcess | undefined,
  name: string,
  logFile: string,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child && child.exitCode !== null) {
      throw new Error(`"${name}" exited with code ${child.exitCode} during start; see ${logFile}`);
    }
    try {
      const reply = await fetch(url, { signal: AbortSignal.timeout(1000) });
      await reply.arrayBuffer();
      return;
    } catch {
      await sleep(100);
    }
  }
  throw new Error(`"${name}" not ready at ${url} after ${timeoutMs} ms; see ${logFile}`);
}

async function stopChild(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const killed = await Promise.race([exited.then(() => true), sleep(5000).then(() => false)]);
  if (!killed) {
    child.kill('SIGKILL');
    await exited;
  }
}

// Starts the process a bench measures: optionally pinned to a core (taskset) and under callgrind,
// waited for until a URL answers 2xx or a line appears on its stdout, and stopped by its own PID.
// Every process started here is killed when the bench exits, however it exits (an error, Ctrl-C).
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { callgrindDump, callgrindZero } from './callgrind-control.js';

export interface MeasuredProcessSpec {
  /** Names the process in errors (`verifier`, `bare uWS`, …). */
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  /** The whole environment (nothing inherited); undefined: this process's. */
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /** `taskset -c CPU`: the core(s) it runs on. */
  readonly cpu?: string;
  /**
   * Under `valgrind --tool=callgrind`, its dumps as `callgrind.out.N` in `dir`, for `zero` and
   * `dump`. `jit`: the process writes machine code as it runs (V8), so `--smc-check=all-non-file`
   * makes callgrind retranslate it (NGINX has none and is counted as it always was, without it).
   */
  readonly callgrind?: { readonly dir: string; readonly jit: boolean };
  /**
   * Ready once this URL answers 2xx (any status with `anyStatus`: a server with no readiness
   * route), a fresh connection each try; or once a line on its stdout matches.
   */
  readonly ready:
    { readonly url: string; readonly anyStatus?: boolean } | { readonly line: RegExp };
  readonly readyTimeoutMs: number;
  /**
   * Where its stderr goes: inherited (the default), ignored (the default under callgrind:
   * valgrind's chatter), or each chunk to this function (a process that reports on stderr).
   */
  readonly stderr?: 'inherit' | 'ignore' | ((text: string) => void);
  /** Instead: its stderr, and its stdout unless read for readiness, appended to this file. */
  readonly logFile?: string;
  /** The signal `stop` sends first (default SIGTERM); SIGKILL follows after 10 s. */
  readonly stopSignal?: NodeJS.Signals;
}

export interface MeasuredProcess {
  readonly pid: number;
  /** The stdout line's match, when readiness was a line. */
  readonly readyMatch?: RegExpExecArray;
  /** Zeroes its callgrind counters (only with `callgrind`). */
  zero(): Promise<void>;
  /** Instructions since the last zero or dump, read from a dump labelled `label`. */
  dump(label: string): Promise<number>;
  /** Signals it and resolves once it has exited; after a first call, a no-op. */
  stop(): Promise<void>;
}

const started = new Set<ChildProcess>();
let hooked = false;

/**
 * Kills `child` with SIGKILL if this process exits while it runs; on SIGINT and SIGTERM this
 * process exits (1) so the hook runs, unless the run handles the signal itself (the stress
 * harness finishes its report, stops its services and removes its cgroups first). For helpers a
 * bench starts beside its server (`perf`).
 */
export function killOnExit(child: ChildProcess): void {
  if (!hooked) {
    hooked = true;
    process.on('exit', () => {
      for (const running of started) running.kill('SIGKILL');
    });
    for (const signal of ['SIGINT', 'SIGTERM'] as const)
      process.on(signal, () => {
        if (process.listenerCount(signal) === 1) process.exit(1);
      });
  }
  started.add(child);
  child.once('exit', () => started.delete(child));
}

/** Starts `spec` and waits until it is ready; if it exits first, fails with its exit code. */
export async function startMeasuredProcess(spec: MeasuredProcessSpec): Promise<MeasuredProcess> {
  const dir = spec.callgrind?.dir;
  const prefix = [
    ...(spec.cpu === undefined ? [] : ['taskset', '-c', spec.cpu]),
    ...(dir === undefined
      ? []
      : [
          'valgrind',
          '--tool=callgrind',
          ...(spec.callgrind?.jit === true ? ['--smc-check=all-non-file'] : []),
          `--callgrind-out-file=${join(dir, 'callgrind.out')}`,
        ]),
  ];
  const [command, ...args] = [...prefix, spec.command, ...spec.args] as [string, ...string[]];
  const byLine = 'line' in spec.ready;
  const log = spec.logFile === undefined ? undefined : openSync(spec.logFile, 'a');
  const onStderr = typeof spec.stderr === 'function' ? spec.stderr : undefined;
  const stderr: number | 'pipe' | 'ignore' | 'inherit' =
    log ??
    (typeof spec.stderr === 'function' ? 'pipe' : (spec.stderr ?? (dir ? 'ignore' : 'inherit')));
  const child = spawn(command, args, {
    cwd: spec.cwd,
    env: spec.env ?? process.env,
    stdio: ['ignore', byLine ? 'pipe' : (log ?? 'ignore'), stderr],
  });
  if (log !== undefined) closeSync(log);
  child.stderr?.setEncoding('utf8').on('data', (text: string) => onStderr?.(text));
  killOnExit(child);
  let stopping = false;
  let ready = false;
  const exited = new Promise<string>((resolve) => {
    child.once('error', (error) => resolve(`could not start (${error.message})`));
    child.once('exit', (code, signal) => {
      const how = code === null ? `was killed by ${signal}` : `exited with code ${code}`;
      if (!stopping && ready) console.error(`"${spec.name}" ${how} while measured`);
      resolve(how);
    });
  });
  const stop = async () => {
    if (stopping) return exited.then(() => undefined);
    stopping = true;
    if (child.exitCode === null && child.signalCode === null) {
      child.kill(spec.stopSignal ?? 'SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
  };
  const waiting = byLine
    ? readyLine(child, spec.ready.line)
    : readyUrl(spec.ready.url, spec.ready.anyStatus === true);
  const outcome = await withDeadline(Promise.race([waiting, exited]), spec.readyTimeoutMs);
  if (typeof outcome === 'string') {
    waiting.cancel();
    await stop();
    throw new Error(
      outcome === 'timeout'
        ? `"${spec.name}" was not ready within ${spec.readyTimeoutMs} ms`
        : `"${spec.name}" ${outcome} before it was ready`,
    );
  }
  ready = true;
  const counted = () => {
    if (dir === undefined) throw new TypeError(`"${spec.name}" does not run under callgrind`);
    return dir;
  };
  const pid = child.pid!;
  return {
    pid,
    ...(outcome.match ? { readyMatch: outcome.match } : {}),
    zero: () => (counted(), callgrindZero(pid)),
    dump: (label) => callgrindDump(pid, counted(), label),
    stop,
  };
}

interface Readiness extends Promise<{ match?: RegExpExecArray }> {
  cancel(): void;
}

/** Resolves once `child`'s stdout so far matches `pattern`; later output is drained unread. */
function readyLine(child: ChildProcess, pattern: RegExp): Readiness {
  const stdout = child.stdout!;
  let text = '';
  let onData: (chunk: string) => void = () => undefined;
  const cancel = () => {
    stdout.off('data', onData);
    stdout.resume();
  };
  const found = new Promise<{ match?: RegExpExecArray }>((resolve) => {
    onData = (chunk) => {
      text += chunk;
      const match = pattern.exec(text);
      if (match === null) return;
      cancel();
      resolve({ match });
    };
  });
  stdout.setEncoding('utf8');
  stdout.on('data', onData);
  return Object.assign(found, { cancel });
}

/**
 * Polls `url` until it answers 2xx, for a server this module did not start (a container); fails
 * after `timeoutMs`.
 */
export async function waitUntilReady(url: string, timeoutMs: number): Promise<void> {
  const waiting = readyUrl(url);
  if ((await withDeadline(waiting, timeoutMs)) === 'timeout') {
    waiting.cancel();
    throw new Error(`${url} was not ready within ${timeoutMs} ms`);
  }
}

/** `promise`'s value, or 'timeout' after `ms` (the timer cleared either way, so no run waits on it). */
async function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms);
  });
  try {
    return await Promise.race([promise, gaveUp]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Polls `url` until it answers 2xx (or at all, with `anyStatus`); a fresh connection each try,
 * never a pooled socket the server may have idled out.
 */
function readyUrl(url: string, anyStatus = false): Readiness {
  let cancelled = false;
  const poll = async () => {
    while (!cancelled) {
      const status = await statusOf(url);
      if (status !== undefined && (anyStatus || (status >= 200 && status < 300))) return {};
      await sleep(100);
    }
    return {};
  };
  return Object.assign(poll(), { cancel: () => (cancelled = true) });
}

/** The status `url` answers with; undefined when it does not answer (yet). */
function statusOf(url: string): Promise<number | undefined> {
  return new Promise((resolve) => {
    const call = request(url, { agent: false, timeout: 5000 }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode));
    });
    call.once('timeout', () => call.destroy());
    call.once('error', () => resolve(undefined));
    call.end();
  });
}

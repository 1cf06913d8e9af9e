// One supervised child process: spawned in its own process group, output kept in a log file,
// stopped by signalling the whole group so nothing it forked (nginx workers) outlives it.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';

export interface ServiceSpec {
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** File that receives stdout and stderr (appended across restarts). */
  readonly logFile: string;
  /** Resolves once the service answers; rejects with a reason when it cannot. */
  readonly ready: (signal: AbortSignal) => Promise<void>;
}

export interface ServiceProcess {
  readonly name: string;
  readonly pid: number | undefined;
  readonly running: boolean;
  start(timeoutMs?: number): Promise<void>;
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<void>;
  /** Synchronous last resort for process exit handlers: SIGKILL the group, no waiting. */
  killNow(): void;
}

// setpriv asks the kernel to SIGTERM the child if this process dies without cleaning up (even on
// SIGKILL), the one case exit handlers cannot cover. Absent on non-Linux hosts: then we rely on
// the handlers alone.
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path));

/**
 * The log's last line, so a start failure names its cause where the log is gone by the time
 * anyone reads the message (CI). Startup lines name files and ports, never a token or a secret.
 */
function lastLine(logFile: string): string {
  try {
    const lines = readFileSync(logFile, 'utf8').trimEnd().split('\n');
    return lines.at(-1)!.slice(0, 300) || '(empty log)';
  } catch {
    return '(no log)';
  }
}

export function createServiceProcess(spec: ServiceSpec): ServiceProcess {
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  function isRunning(): boolean {
    return child !== undefined && child.exitCode === null && child.signalCode === null;
  }

  async function start(timeoutMs = 30_000): Promise<void> {
    if (isRunning()) return;
    const log = openSync(spec.logFile, 'a');
    const [command, args] = SETPRIV
      ? [SETPRIV, ['--pdeathsig', 'SIGTERM', '--', spec.command, ...spec.args]]
      : [spec.command, [...spec.args]];
    const proc = spawn(command, args, {
      cwd: spec.cwd,
      env: spec.env,
      detached: true, // own process group, so stop() reaches every process it forks
      stdio: ['ignore', log, log],
    });
    closeSync(log);
    child = proc;
    let exitReason = '';
    exited = new Promise<void>((resolve) => {
      proc.once('exit', (code, signal) => {
        exitReason = signal ? `killed by ${signal}` : `exited with code ${String(code)}`;
        resolve();
      });
      proc.once('error', (error) => {
        exitReason = `could not start: ${error.message}`;
        resolve();
      });
    });
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), timeoutMs);
    try {
      await Promise.race([
        spec.ready(abort.signal),
        exited.then(() => {
          throw new Error(
            `${spec.name} ${exitReason} before it was ready (log: ${spec.logFile}): ${lastLine(spec.logFile)}`,
          );
        }),
      ]);
    } catch (error) {
      killGroup('SIGKILL');
      if (abort.signal.aborted) {
        throw new Error(`${spec.name} was not ready after ${timeoutMs} ms (log: ${spec.logFile})`, {
          cause: error,
        });
      }
      throw error;
    } finally {
      abort.abort();
      clearTimeout(timer);
    }
  }

  function killGroup(signal: NodeJS.Signals): void {
    const pid = child?.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // The group is already gone.
    }
  }

  async function stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 5_000): Promise<void> {
    if (!child) return;
    if (isRunning()) killGroup(signal);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), timeoutMs);
    });
    if ((await Promise.race([exited, late])) === 'late') {
      killGroup('SIGKILL');
      await exited;
    }
    clearTimeout(timer);
    // Workers of a group leader that exited may linger a moment; make sure none survive.
    killGroup('SIGKILL');
  }

  return {
    name: spec.name,
    get pid() {
      return child?.pid;
    },
    get running() {
      return isRunning();
    },
    start,
    stop,
    killNow: () => killGroup('SIGKILL'),
  };
}

/** Polls a URL until it answers with an expected status, or the signal aborts. */
export async function waitForHttp(
  url: string,
  signal: AbortSignal,
  accept: (status: number) => boolean = (status) => status === 200,
): Promise<void> {
  while (!signal.aborted) {
    try {
      const response = await fetch(url, {
        signal: AbortSignal.any([signal, AbortSignal.timeout(2_000)]),
      });
      await response.arrayBuffer();
      if (accept(response.status)) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no answer from ${url}`);
}

// Peak RSS and CPU seconds of each service, read from /proc while the run goes on. A service is a
// root PID plus its descendants (an NGINX master and its workers), found again at every sample.
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

export interface ServiceUsage {
  readonly name: string;
  /** Sum over the service's processes of each one's peak resident set (VmHWM), in bytes. */
  readonly peakRssBytes: number;
  /** User + system CPU time of the service's processes since the sampler started, in seconds. */
  readonly cpuSeconds: number;
  /** Time its threads spent runnable but waiting for a core, over the same window. */
  readonly waitSeconds: number;
  /** The sampler's own window, first sample to last. */
  readonly wallSeconds: number;
}

export const CLOCK_TICKS = 100; // sysconf(_SC_CLK_TCK) on Linux x86-64 and arm64

interface ProcessSample {
  hwmBytes: number;
  cpuTicks: number;
  /** Ticks already used when the sampler started (0 for a process born later). */
  startTicks: number;
  waitSeconds: number;
  startWaitSeconds: number;
}

/** Parses `/proc/PID/stat`: ppid and utime + stime, skipping the parenthesised command name. */
export function parseStat(text: string): { ppid: number; cpuTicks: number } | undefined {
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const fields = text.slice(close + 2).split(' ');
  // After ")": state(0) ppid(1) … utime(11) stime(12)
  const ppid = Number(fields[1]);
  const cpuTicks = Number(fields[11]) + Number(fields[12]);
  return Number.isFinite(ppid) && Number.isFinite(cpuTicks) ? { ppid, cpuTicks } : undefined;
}

/** A process's user and system CPU time so far, in µs (`/proc/PID/stat`'s utime and stime). */
export function processCpuMicros(pid: number): { user: number; system: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const micros = (field: string | undefined) => (Number(field) * 1e6) / CLOCK_TICKS;
  return { user: micros(fields[11]), system: micros(fields[12]) };
}

/**
 * Seconds a process's threads spent runnable but waiting for a CPU (second field of each
 * `/proc/PID/task/TID/schedstat`, in ns): on a machine shared with other work, a process can be
 * starved of its core while its own CPU time looks low. 0 when schedstat is unavailable.
 */
export function runQueueWaitSeconds(pid: number): number {
  let waitNs = 0;
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return 0;
  }
  for (const task of tasks) {
    const fields = readText(`/proc/${pid}/task/${task}/schedstat`)?.split(' ');
    const wait = Number(fields?.[1]);
    if (Number.isFinite(wait)) waitNs += wait;
  }
  return waitNs / 1e9;
}

/** Reads `VmHWM` from `/proc/PID/status` in bytes (0 for kernel threads or when absent). */
export function parseHwm(status: string): number {
  const match = /^VmHWM:\s+(\d+) kB$/m.exec(status);
  return match ? Number(match[1]) * 1024 : 0;
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function processTree(roots: readonly number[]): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readText(`/proc/${entry}/stat`);
    const parsed = stat ? parseStat(stat) : undefined;
    if (parsed) parents.set(Number(entry), parsed.ppid);
  }
  const tree = new Set(roots.filter((pid) => parents.has(pid)));
  let grew = true;
  while (grew) {
    grew = false;
    for (const [pid, ppid] of parents) {
      if (!tree.has(pid) && tree.has(ppid)) {
        tree.add(pid);
        grew = true;
      }
    }
  }
  return [...tree];
}

export interface UsageSampler {
  /** Takes one sample now (also done every `intervalMs` until `stop`). */
  sample(): void;
  /** Stops sampling after a last sample and returns the usage per service. */
  stop(): ServiceUsage[];
}

/** Samples the given services (name → root PIDs) every `intervalMs`. */
export function createUsageSampler(
  services: ReadonlyMap<string, readonly number[]>,
  intervalMs = 1000,
): UsageSampler {
  const seen = new Map<string, Map<number, ProcessSample>>();
  for (const name of services.keys()) seen.set(name, new Map());

  let started = false;
  const startedAt = performance.now();
  let lastAt = startedAt;
  function sample(): void {
    lastAt = performance.now();
    for (const [name, roots] of services) {
      const perPid = seen.get(name)!;
      for (const pid of processTree(roots)) {
        const stat = readText(`/proc/${pid}/stat`);
        const status = readText(`/proc/${pid}/status`);
        const parsed = stat ? parseStat(stat) : undefined;
        if (!parsed || !status) continue;
        const previous = perPid.get(pid);
        const waitSeconds = runQueueWaitSeconds(pid);
        perPid.set(pid, {
          hwmBytes: Math.max(previous?.hwmBytes ?? 0, parseHwm(status)),
          cpuTicks: parsed.cpuTicks,
          startTicks: previous?.startTicks ?? (started ? 0 : parsed.cpuTicks),
          waitSeconds,
          startWaitSeconds: previous?.startWaitSeconds ?? (started ? 0 : waitSeconds),
        });
      }
    }
    started = true;
  }

  sample();
  const timer = setInterval(sample, intervalMs);
  timer.unref();
  return {
    sample,
    stop() {
      sample();
      clearInterval(timer);
      return [...seen].map(([name, perPid]) => {
        let peakRssBytes = 0;
        let ticks = 0;
        let waitSeconds = 0;
        for (const sampled of perPid.values()) {
          peakRssBytes += sampled.hwmBytes;
          ticks += sampled.cpuTicks - sampled.startTicks;
          waitSeconds += sampled.waitSeconds - sampled.startWaitSeconds;
        }
        const wallSeconds = (lastAt - startedAt) / 1000;
        return { name, peakRssBytes, cpuSeconds: ticks / CLOCK_TICKS, waitSeconds, wallSeconds };
      });
    },
  };
}

/**
 * The exit code of a load generator, which is stopped with the runner: an interrupt (SIGINT or
 * SIGTERM) of this process is passed on to it as SIGINT, so it still writes its results.
 */
export async function exitOf(child: ChildProcess): Promise<number | null> {
  const interrupt = () => child.kill('SIGINT');
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  try {
    return await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (status) => resolve(status));
    });
  } finally {
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
  }
}

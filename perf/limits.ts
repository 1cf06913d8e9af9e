// Per-service CPU and memory limits without Docker: one cgroup v1 group per service under
// /sys/fs/cgroup/{cpu,memory,cpuset}, like the study's containers had. Where the groups cannot be
// written (not root, cgroup v2 only, read-only mount) every service is only pinned to its core,
// and the run says so in its report. The study: docs/study.md.
import { spawnSync } from 'node:child_process';
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  readFileSync,
  rmdirSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ResourceProfile {
  readonly name: 'study' | 'tight';
  /** CPUs per service, as a fraction of one core. */
  readonly cpu: number;
  readonly memoryMb: number;
  /**
   * The CFS enforcement period, µs: a group that spends its quota early waits for the rest of the
   * period. The kernel's and Docker's default is 100 ms, as long as the capacity goal's p99, so at
   * a breaking step where the quota runs out the period's phase decides the p99 (stress
   * `--cfs-period`; docs/performance.md, "Capacity, three searches in a row").
   */
  readonly cfsPeriodUs: number;
}

/** The kernel's and Docker's CFS period, µs. */
export const DEFAULT_CFS_PERIOD_US = 100_000;

export const PROFILES: Readonly<Record<ResourceProfile['name'], ResourceProfile>> = Object.freeze({
  study: Object.freeze({
    name: 'study',
    cpu: 0.5,
    memoryMb: 400,
    cfsPeriodUs: DEFAULT_CFS_PERIOD_US,
  }),
  tight: Object.freeze({
    name: 'tight',
    cpu: 0.25,
    memoryMb: 64,
    cfsPeriodUs: DEFAULT_CFS_PERIOD_US,
  }),
});

/** The files that must exist (and be writable) for each controller we use. */
const CONTROLLERS = {
  cpu: 'cpu.cfs_quota_us',
  memory: 'memory.limit_in_bytes',
  cpuset: 'cpuset.cpus',
} as const;
type Controller = keyof typeof CONTROLLERS;

/** CFS bandwidth accounting of one group (cgroup v1 `cpu.stat`). */
export interface CpuThrottling {
  /** Enforcement periods (the profile's `cfsPeriodUs` each) in which the group was runnable. */
  readonly periods: number;
  /** Periods that ended with the group throttled: its quota was used up. */
  readonly throttledPeriods: number;
  /** Total time the group's tasks waited for the next period. */
  readonly throttledSeconds: number;
}

/** Parses cgroup v1 `cpu.stat` (`nr_periods`, `nr_throttled`, `throttled_time` in ns). */
export function parseCpuStat(text: string): CpuThrottling | undefined {
  const field = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1]);
  const periods = field('nr_periods');
  const throttledPeriods = field('nr_throttled');
  const throttledNs = field('throttled_time');
  if (![periods, throttledPeriods, throttledNs].every(Number.isFinite)) return undefined;
  return { periods, throttledPeriods, throttledSeconds: throttledNs / 1e9 };
}

/** What happened between two readings of a group's `cpu.stat`. */
export function throttlingSince(before: CpuThrottling, after: CpuThrottling): CpuThrottling {
  return {
    periods: after.periods - before.periods,
    throttledPeriods: after.throttledPeriods - before.throttledPeriods,
    throttledSeconds: after.throttledSeconds - before.throttledSeconds,
  };
}

export type LimitSupport =
  { readonly mode: 'cgroup' } | { readonly mode: 'pin'; readonly reason: string };

export interface LimitProbe {
  readonly isRoot: boolean;
  readonly exists: (path: string) => boolean;
  readonly writable: (path: string) => boolean;
}

const realProbe: LimitProbe = {
  isRoot: process.getuid?.() === 0,
  exists: existsSync,
  writable: (path) => {
    try {
      accessSync(path, constants.W_OK);
      return true;
    } catch {
      return false;
    }
  },
};

/** Decides between real cgroup v1 limits and pinning only; the reason names what was missing. */
export function detectLimitSupport(root: string, probe: LimitProbe = realProbe): LimitSupport {
  if (!probe.isRoot)
    return { mode: 'pin', reason: 'not running as root, cgroups cannot be written' };
  for (const [controller, file] of Object.entries(CONTROLLERS)) {
    const dir = join(root, controller);
    if (!probe.exists(join(dir, file))) {
      return { mode: 'pin', reason: `no cgroup v1 "${controller}" controller at ${dir}` };
    }
    if (!probe.writable(dir)) return { mode: 'pin', reason: `${dir} is not writable` };
  }
  return { mode: 'cgroup' };
}

export interface Command {
  readonly command: string;
  readonly args: readonly string[];
}

export interface Confinement {
  readonly support: LimitSupport;
  readonly profile: ResourceProfile;
  /** The core (taskset / cpuset list) every service runs on. */
  readonly cpus: string;
  /** Wraps a command so the process starts already limited (`limited`) or only pinned. */
  wrap(service: string, command: Command, limited: boolean): Command;
  /** Moves processes started elsewhere (already running) into the service's limits, or pins them. */
  adopt(service: string, pids: readonly number[], limited: boolean): void;
  /** Peak memory charged to the service's group (page cache included), when limited by cgroup. */
  peakMemoryBytes(service: string): number | undefined;
  /** The service group's CFS throttling so far, when limited by cgroup. */
  cpuThrottling(service: string): CpuThrottling | undefined;
  /** Removes every group this confinement created; processes left in them move to the parent. */
  release(): Promise<void>;
}

export interface ConfinementOptions {
  readonly root?: string;
  readonly profile: ResourceProfile;
  readonly cpus: string;
  readonly support?: LimitSupport;
  /** Distinguishes concurrent runs on one machine. */
  readonly runId?: string;
}

/**
 * Prepares limits for one run. In cgroup mode a group is created per service on first use with
 * the profile's CPU quota, memory limit and the service core; in pin mode `taskset` is used.
 */
export function createConfinement(options: ConfinementOptions): Confinement {
  const root = options.root ?? '/sys/fs/cgroup';
  const support = options.support ?? detectLimitSupport(root);
  const { profile, cpus } = options;
  const runId = options.runId ?? `${process.pid}-${Date.now().toString(36)}`;
  const created = new Map<string, Record<Controller, string>>();

  function groupOf(service: string): Record<Controller, string> {
    const existing = created.get(service);
    if (existing) return existing;
    const name = `secret-gate-stress-${runId}-${service}`;
    const dirs = {
      cpu: join(root, 'cpu', name),
      memory: join(root, 'memory', name),
      cpuset: join(root, 'cpuset', name),
    };
    created.set(service, dirs);
    mkdirSync(dirs.cpu);
    writeFileSync(join(dirs.cpu, 'cpu.cfs_period_us'), String(profile.cfsPeriodUs));
    writeFileSync(
      join(dirs.cpu, 'cpu.cfs_quota_us'),
      String(Math.round(profile.cpu * profile.cfsPeriodUs)),
    );
    mkdirSync(dirs.memory);
    writeFileSync(
      join(dirs.memory, 'memory.limit_in_bytes'),
      String(profile.memoryMb * 1024 * 1024),
    );
    mkdirSync(dirs.cpuset);
    // A cpuset group accepts no task until both its memory nodes and its CPUs are set.
    writeFileSync(
      join(dirs.cpuset, 'cpuset.mems'),
      readFileSync(join(root, 'cpuset', 'cpuset.mems')),
    );
    writeFileSync(join(dirs.cpuset, 'cpuset.cpus'), cpus);
    return dirs;
  }

  /** A file of the service's group, or undefined when it has no group (or it is gone). */
  function readGroupFile(
    service: string,
    controller: Controller,
    file: string,
  ): string | undefined {
    const dirs = created.get(service);
    if (!dirs) return undefined;
    try {
      return readFileSync(join(dirs[controller], file), 'utf8');
    } catch {
      return undefined;
    }
  }

  function pin(command: Command): Command {
    return { command: 'taskset', args: ['-c', cpus, command.command, ...command.args] };
  }

  return {
    support,
    profile,
    cpus,
    wrap(service, command, limited) {
      if (support.mode === 'pin' || !limited) return pin(command);
      const dirs = groupOf(service);
      const join_ = Object.values(dirs)
        .map((dir) => `echo $$ > ${dir}/cgroup.procs`)
        .join(' && ');
      return {
        command: '/bin/sh',
        args: ['-c', `${join_} && exec "$@"`, 'sh', command.command, ...command.args],
      };
    },
    adopt(service, pids, limited) {
      for (const pid of pids) {
        if (support.mode === 'cgroup' && limited) {
          for (const dir of Object.values(groupOf(service))) {
            writeFileSync(join(dir, 'cgroup.procs'), String(pid));
          }
        } else {
          pinRunning(pid, cpus);
        }
      }
    },
    peakMemoryBytes(service) {
      const text = readGroupFile(service, 'memory', 'memory.max_usage_in_bytes');
      return text === undefined ? undefined : Number(text);
    },
    cpuThrottling(service) {
      const text = readGroupFile(service, 'cpu', 'cpu.stat');
      return text === undefined ? undefined : parseCpuStat(text);
    },
    async release() {
      for (const dirs of created.values()) {
        for (const [controller, dir] of Object.entries(dirs)) {
          await removeGroup(join(root, controller), dir);
        }
      }
      created.clear();
    },
  };
}

function pinRunning(pid: number, cpus: string): void {
  // sched_setaffinity through taskset; -a covers every thread of the process.
  spawnSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}

/** Empties a group into its parent and removes it; a task still exiting gets a few retries. */
async function removeGroup(parent: string, dir: string): Promise<void> {
  for (let attempt = 0; attempt < 20 && existsSync(dir); attempt++) {
    try {
      const left = readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean);
      for (const pid of left) {
        try {
          writeFileSync(join(parent, 'cgroup.procs'), pid);
        } catch {
          // The process exited between the read and the move.
        }
      }
      rmdirSync(dir);
    } catch {
      await sleep(100);
    }
  }
}

// A container's CPU time read on the host, for benches that compare a process in an image with one
// on the host: from the container's cgroup (every process and thread in it, in ns on cgroup v1's
// `cpuacct.usage`, µs on v2's `cpu.stat`), or else from /proc of its main PID in 10 ms ticks.
// The cgroup is found through /proc/PID/cgroup, so no engine-specific layout is assumed.
import { readFileSync } from 'node:fs';
import { CLOCK_TICKS, parseStat } from './process-stats.js';

/** Where a CPU figure is read and how its text becomes µs. */
export interface CpuSource {
  /** The file read at each sample. */
  readonly file: string;
  /** Its text as CPU µs, or undefined when the text is not what the file should hold. */
  readonly parse: (text: string) => number | undefined;
}

/** cgroup v1 `cpuacct.usage`: one number, ns. */
export function parseCpuacctUsage(text: string): number | undefined {
  const match = /^\s*(\d+)\s*$/.exec(text);
  return match ? Number(match[1]) / 1000 : undefined;
}

/** cgroup v2 `cpu.stat`: its `usage_usec` line. */
export function parseCpuStatUsage(text: string): number | undefined {
  const match = /^usage_usec (\d+)$/m.exec(text);
  return match ? Number(match[1]) : undefined;
}

/** `/proc/PID/stat`: utime + stime, clock ticks turned into µs. */
export function parseProcStatMicros(text: string): number | undefined {
  const stat = parseStat(text);
  return stat ? (stat.cpuTicks * 1e6) / CLOCK_TICKS : undefined;
}

/**
 * The CPU accounting file of the cgroup that `/proc/PID/cgroup` (its text) names: v1's `cpuacct`
 * hierarchy when one is listed (a hybrid host also lists a `0::` line whose v2 group has no
 * controllers), else the unified one. Undefined when the process sits at a hierarchy's root: that
 * group is the whole machine, not the container.
 */
export function cgroupCpuSource(
  procCgroup: string,
  root = '/sys/fs/cgroup',
): CpuSource | undefined {
  const lines = procCgroup.split('\n').map((line) => line.split(':'));
  const v1 = lines.find(
    ([, controllers]) => controllers !== undefined && controllers.split(',').includes('cpuacct'),
  );
  if (v1) {
    const path = v1.slice(2).join(':');
    return path === '/' || path === ''
      ? undefined
      : { file: `${root}/cpuacct${path}/cpuacct.usage`, parse: parseCpuacctUsage };
  }
  const v2 = lines.find(([id, controllers]) => id === '0' && controllers === '');
  const path = v2?.slice(2).join(':');
  return path === undefined || path === '/' || path === ''
    ? undefined
    : { file: `${root}${path}/cpu.stat`, parse: parseCpuStatUsage };
}

/**
 * A reader of the CPU µs used so far by the container whose main process is `pid` (the engine's
 * `.State.Pid`), and where it reads them. The cgroup is preferred (exact, and it counts every
 * process of the container); /proc of the PID when the cgroup file cannot be read.
 */
export function containerCpu(pid: number): { readonly source: string; read: () => number } {
  const cgroup = cgroupCpuSource(readFileSync(`/proc/${pid}/cgroup`, 'utf8'));
  const source: CpuSource =
    cgroup && readable(cgroup) ? cgroup : { file: `/proc/${pid}/stat`, parse: parseProcStatMicros };
  return {
    source: source.file,
    read: () => {
      const micros = source.parse(readFileSync(source.file, 'utf8'));
      if (micros === undefined) throw new Error(`${source.file} holds no CPU figure`);
      return micros;
    },
  };
}

function readable(source: CpuSource): boolean {
  try {
    return source.parse(readFileSync(source.file, 'utf8')) !== undefined;
  } catch {
    return false;
  }
}

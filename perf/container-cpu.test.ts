// How the image rows of `npm run bench:verifier` read a container's CPU on the host: which cgroup
// file, and what its text means. Files as Docker 20.10 and the kernel write them.
import { describe, expect, it } from 'vitest';
import {
  cgroupCpuSource,
  containerCpu,
  parseCpuacctUsage,
  parseCpuStatUsage,
  parseProcStatMicros,
} from './container-cpu.js';

const cpuMicrosSince = (start: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(start);
  return used.user + used.system;
};

const ID = '2a94ad0463fa56c1faa8c69081db312e97b1264675cb6f32596421ba397b9146';

/** /proc/PID/cgroup of a container on a cgroup v1 host with the unified line (Debian 12 hybrid). */
const V1_CONTAINER = [
  `9:name=systemd:/docker/${ID}`,
  `4:memory:/docker/${ID}`,
  `2:cpuacct:/docker/${ID}`,
  `1:cpu:/docker/${ID}`,
  `0::/docker/${ID}`,
  '',
].join('\n');

describe('the cgroup a container is accounted in', () => {
  it('reads cgroup v1 cpuacct.usage of the container when the cpuacct hierarchy is listed', () => {
    const source = cgroupCpuSource(V1_CONTAINER);
    expect(source?.file).toBe(`/sys/fs/cgroup/cpuacct/docker/${ID}/cpuacct.usage`);
    expect(source?.parse('30739187\n')).toBe(30739.187);
  });

  it('finds cpuacct when it is mounted together with cpu', () => {
    const source = cgroupCpuSource(`3:cpu,cpuacct:/docker/${ID}\n0::/\n`, '/cg');
    expect(source?.file).toBe(`/cg/cpuacct/docker/${ID}/cpuacct.usage`);
  });

  it('reads cgroup v2 cpu.stat of the container on a unified-only host', () => {
    const source = cgroupCpuSource(`0::/system.slice/docker-${ID}.scope\n`);
    expect(source?.file).toBe(`/sys/fs/cgroup/system.slice/docker-${ID}.scope/cpu.stat`);
    expect(source?.parse('usage_usec 1250\nuser_usec 1000\nsystem_usec 250\n')).toBe(1250);
  });

  it('names no group for a process at the root, which would count the whole machine', () => {
    expect(cgroupCpuSource('2:cpuacct:/\n1:cpu:/\n0::/\n')).toBeUndefined();
    expect(cgroupCpuSource('0::/\n')).toBeUndefined();
  });
});

describe('CPU figures as µs', () => {
  it('turns cpuacct.usage nanoseconds into µs and refuses anything else', () => {
    expect(parseCpuacctUsage('1000\n')).toBe(1);
    expect(parseCpuacctUsage('')).toBeUndefined();
    expect(parseCpuacctUsage('12 34')).toBeUndefined();
  });

  it('takes usage_usec from cpu.stat, not user_usec', () => {
    expect(parseCpuStatUsage('user_usec 7\nusage_usec 9\n')).toBe(9);
    expect(parseCpuStatUsage('nr_periods 0\n')).toBeUndefined();
  });

  it('adds utime and stime of /proc/PID/stat, 10 ms ticks, even with spaces in the name', () => {
    const fields = ['S', '1', ...Array.from({ length: 9 }, () => '0'), '150', '50', '0'];
    expect(parseProcStatMicros(`42 (node main) ${fields.join(' ')}`)).toBe(2_000_000);
    expect(parseProcStatMicros('garbage')).toBeUndefined();
  });
});

describe('a running process read as a container would be', () => {
  it('counts CPU it spends, from its cgroup or else its /proc entry', () => {
    const cpu = containerCpu(process.pid);
    const before = cpu.read();
    // 30 ms of this process's own CPU, however long a loaded machine takes to give it: 3 ticks.
    const start = process.cpuUsage();
    while (cpuMicrosSince(start) < 30_000) Math.sqrt(Math.random());
    expect(cpu.source).toMatch(/cpuacct\.usage$|cpu\.stat$|\/stat$/);
    expect(cpu.read()).toBeGreaterThan(before);
  });
});

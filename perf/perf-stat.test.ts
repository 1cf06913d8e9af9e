import { describe, expect, it } from 'vitest';
import { parsePerfStat, totalCount } from './perf-stat.js';

// As `perf stat --per-thread -x, -e raw_syscalls:sys_enter,syscalls:sys_enter_sendto,...` writes it.
const OUTPUT = `# started on Sat Dec  5 03:53:20 2026

node-4100,51234,,raw_syscalls:sys_enter,2001234567,100.00,,
DelayedTaskSche-4101,<not counted>,,raw_syscalls:sys_enter,0,100.00,,
node-4102,37,,raw_syscalls:sys_enter,2001234567,100.00,,
node-4100,22000,,syscalls:sys_enter_sendto,2001234567,100.00,,
node-4100,5500,,syscalls:sys_enter_epoll_pwait,2001234567,100.00,,
node-4102,0,,syscalls:sys_enter_epoll_pwait,2001234567,100.00,,
V8 Default-Work-4103,12,,syscalls:sys_enter_futex,2001234567,100.00,,
node-4100,3,,syscalls:sys_enter_futex,2001234567,100.00,,
node-4100,130,,page-faults,2001234567,100.00,,
`;

describe('parsePerfStat', () => {
  const events = parsePerfStat(OUTPUT);

  it('sums the threads of one name and keeps the others apart', () => {
    expect(events.get('raw_syscalls:sys_enter')).toEqual(new Map([['node', 51_271]]));
    expect(events.get('futex')).toEqual(
      new Map([
        ['V8 Default-Work', 12],
        ['node', 3],
      ]),
    );
  });

  it('names a system call without its tracepoint prefix, and other events as perf does', () => {
    expect(totalCount(events, 'sendto')).toBe(22_000);
    expect(totalCount(events, 'page-faults')).toBe(130);
  });

  it('leaves out zero and uncounted rows, so an absent call counts 0', () => {
    expect(events.get('epoll_pwait')).toEqual(new Map([['node', 5500]]));
    expect(totalCount(events, 'madvise')).toBe(0);
    expect([...events.keys()]).not.toContain('');
  });
});

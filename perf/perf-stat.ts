// Reads `perf stat --per-thread -x,` output: counts by event, then by thread name (the threads of a
// name summed: a process's pool threads share one). perf writes a thread as `name-tid`, a name may
// hold dashes and spaces, and an event with no count as `<not counted>`.

/** Event (a `syscalls:` prefix dropped) → thread name → count; zero and uncounted rows left out. */
export type PerfStatCounts = Map<string, Map<string, number>>;

export function parsePerfStat(text: string): PerfStatCounts {
  const events: PerfStatCounts = new Map();
  for (const line of text.split('\n')) {
    const [thread, count, , event] = line.split(',');
    if (thread === undefined || event === undefined || !(Number(count) > 0)) continue;
    const name = thread.slice(0, thread.lastIndexOf('-'));
    const kind = event.replace(/^syscalls:sys_enter_/, '');
    const byThread = events.get(kind) ?? new Map<string, number>();
    byThread.set(name, (byThread.get(name) ?? 0) + Number(count));
    events.set(kind, byThread);
  }
  return events;
}

/** The count of `event` over every thread (0 when perf saw none). */
export function totalCount(events: PerfStatCounts, event: string): number {
  let sum = 0;
  for (const count of events.get(event)?.values() ?? []) sum += count;
  return sum;
}

// NGINX's cost per request as counts that do not move with machine load: user-space instructions
// from a callgrind dump and system calls from an `strace -c` summary, each divided by the number
// of requests sent between zeroing and reading (../shared design notes, "counted instead of timed").

/** System calls an idle event loop makes whatever it serves: waiting is not work. */
export const IDLE_SYSCALLS: readonly string[] = Object.freeze(['epoll_wait', 'epoll_pwait']);

/**
 * The `Ir` total of one callgrind dump (`callgrind.out.PID.N`). The `totals:` line holds the
 * events since the last zero or dump in the order of the `events:` line; `summary:` is older
 * callgrind's spelling of it and only read when `totals:` is absent.
 */
export function parseCallgrindTotals(text: string): number {
  const events = /^events:\s*(.+)$/m.exec(text)?.[1]?.trim().split(/\s+/);
  if (!events) throw new Error('not a callgrind dump: no "events:" line');
  const index = events.indexOf('Ir');
  if (index < 0) throw new Error(`callgrind dump has no "Ir" event (events: ${events.join(' ')})`);
  const line = /^totals:\s*(.+)$/m.exec(text)?.[1] ?? /^summary:\s*(.+)$/m.exec(text)?.[1];
  if (line === undefined) throw new Error('callgrind dump has no "totals:" line');
  const value = Number(line.trim().split(/\s+/)[index]);
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new Error(`callgrind dump has an unreadable "totals:" line: ${line.trim()}`);
  }
  return value;
}

/**
 * Calls per system call from `strace -c` (its summary table, with or without the `errors`
 * column); the `total` line is left out, so the sum is over the rows themselves.
 */
export function parseStraceSummary(text: string): Map<string, number> {
  const calls = new Map<string, number>();
  let header = false;
  for (const line of text.split('\n')) {
    if (/^\s*% time\s+seconds/.test(line)) {
      header = true;
      continue;
    }
    if (!header || /^[-\s]+$/.test(line)) continue;
    // % time, seconds, usecs/call, calls, [errors,] syscall
    const fields = line.trim().split(/\s+/);
    if (fields.length < 5 || fields.length > 6) continue;
    const name = fields.at(-1)!;
    const count = Number(fields[3]);
    if (name === 'total' || !Number.isSafeInteger(count)) continue;
    calls.set(name, (calls.get(name) ?? 0) + count);
  }
  if (!header) throw new Error('not an strace -c summary: no "% time" header');
  return calls;
}

export interface SyscallCount {
  /** System calls per request, idle waits left out. */
  readonly perRequest: number;
  /** Per-request calls by name, most frequent first. */
  readonly breakdown: readonly { readonly name: string; readonly perRequest: number }[];
}

/** Divides a summary by `requests`, leaving out `exclude` (the idle waits by default). */
export function syscallsPerRequest(
  calls: ReadonlyMap<string, number>,
  requests: number,
  exclude: readonly string[] = IDLE_SYSCALLS,
): SyscallCount {
  if (!(requests > 0)) throw new TypeError('"requests" must be positive');
  const breakdown = [...calls]
    .filter(([name]) => !exclude.includes(name))
    .map(([name, count]) => ({ name, perRequest: count / requests }))
    .sort((a, b) => b.perRequest - a.perRequest || a.name.localeCompare(b.name));
  const total = breakdown.reduce((sum, entry) => sum + entry.perRequest, 0);
  return { perRequest: total, breakdown };
}

export interface CountRow {
  readonly name: string;
  readonly requests: number;
  /** User-space instructions (callgrind `Ir`) per request, NGINX as one process. */
  readonly instructions: number;
  readonly syscalls: SyscallCount;
}

export interface CountGoal {
  readonly goal: string;
  readonly value: number;
  readonly limit: number;
  readonly met: boolean;
}

/**
 * The hot-path issue's budget for an edge-cache hit of `/secret` (issue 20): NGINX within 3× the
 * instructions of `/hello` and at most 10 system calls. Rows are found by name; a row missing
 * from the run leaves its goal out.
 */
export function evaluateCountGoals(
  rows: readonly CountRow[],
  names: { readonly floor: string; readonly cached: string },
): CountGoal[] {
  const floor = rows.find((row) => row.name === names.floor);
  const cached = rows.find((row) => row.name === names.cached);
  if (!floor || !cached) return [];
  const goals: [string, number, number][] = [
    ['cached /secret ≤ 3× the instructions of /hello', cached.instructions / floor.instructions, 3],
    ['cached /secret ≤ 10 system calls', cached.syscalls.perRequest, 10],
  ];
  return goals.map(([goal, value, limit]) => ({ goal, value, limit, met: value <= limit }));
}

/** Each row's instructions as a multiple of the first row's (the `/hello` floor). */
function relative(rows: readonly CountRow[], row: CountRow): string {
  const floor = rows[0]?.instructions;
  return floor ? `${(row.instructions / floor).toFixed(1)}×` : '';
}

/** The table `npm run bench:counts` prints: one line per row, the system calls spelt out. */
export function formatCounts(rows: readonly CountRow[], goals: readonly CountGoal[] = []): string {
  const width = Math.max(...rows.map((row) => row.name.length), 7);
  const syscallNames = (count: SyscallCount) =>
    count.breakdown
      .filter((entry) => entry.perRequest >= 0.05)
      .map((entry) => `${entry.name} ${trimmed(entry.perRequest)}`)
      .join(', ');
  return [
    `${'request'.padEnd(width)}  ${'instructions'.padStart(12)}  ${'× first'.padStart(8)}  ${'syscalls'.padStart(8)}  system calls per request`,
    ...rows.map(
      (row) =>
        `${row.name.padEnd(width)}  ${Math.round(row.instructions).toLocaleString('en-US').padStart(12)}  ${relative(rows, row).padStart(8)}  ${row.syscalls.perRequest.toFixed(1).padStart(8)}  ${syscallNames(row.syscalls)}`,
    ),
    ...(goals.length > 0 ? ['', 'goals:'] : []),
    ...goals.map((g) => `  ${g.met ? 'met   ' : 'MISSED'}  ${g.goal}: ${g.value.toFixed(2)}`),
  ].join('\n');
}

function trimmed(value: number): string {
  // 4, 3.96, 0.99: two decimals at most, no trailing zeros.
  return String(Number(value.toFixed(2)));
}

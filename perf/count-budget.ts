// The counted budget: a baseline of counts per request kind kept in the repository, and the check
// CI runs against it. Counts do not move with machine load, so a change that spends instructions or
// adds a system call is seen on any machine; spending them on purpose means recording a new
// baseline, and the record in docs/performance.md must name it (by digest) with its reason.
import { createHash } from 'node:crypto';

/** Counts of one request kind: instructions and system calls (by name) per request. */
export interface BudgetRow {
  readonly instructions: number;
  readonly syscalls: Readonly<Record<string, number>>;
}

/** What a run is judged against: rows counted with `requests` per row after `warmup`. */
export interface Budget {
  readonly requests: number;
  readonly warmup: number;
  readonly rows: Readonly<Record<string, BudgetRow>>;
}

/** How far a kind may move before the check fails. */
export interface BudgetTolerance {
  /** Instructions may grow by this fraction (0.02: +2 %). */
  readonly instructions: number;
  /**
   * System calls per request a name may gain. Below one, so any added call per request fails,
   * while the few calls a run makes once (a log flush, a timer) spread over its requests do not.
   */
  readonly syscalls: number;
}

export const BUDGET_TOLERANCE: BudgetTolerance = Object.freeze({
  instructions: 0.02,
  syscalls: 0.5,
});

/** A counted row as the counting harness returns it (see nginx-counts.ts's CountRow). */
export interface CountedRow {
  readonly name: string;
  readonly instructions: number;
  readonly syscalls: { readonly breakdown: readonly { name: string; perRequest: number }[] };
}

export interface BudgetFinding {
  readonly row: string;
  readonly over: boolean;
  readonly message: string;
}

/** The rows of a run in the baseline's shape, rounded as the file keeps them. */
export function budgetRows(rows: readonly CountedRow[]): Record<string, BudgetRow> {
  return Object.fromEntries(
    rows.map((row) => [
      row.name,
      {
        instructions: Math.round(row.instructions),
        syscalls: Object.fromEntries(
          row.syscalls.breakdown.map(({ name, perRequest }) => [name, round2(perRequest)]),
        ),
      },
    ]),
  );
}

/**
 * Judges `rows` against `budget`: over when a kind's instructions grow past the tolerance, when
 * it makes a system call more per request (of any name), when a kind has no baseline, or when a
 * baseline kind was not counted. Kinds well under budget are reported too, not failed: recording
 * them keeps the gain from being spent silently.
 */
export function checkBudget(
  budget: Budget,
  rows: readonly CountedRow[],
  tolerance: BudgetTolerance = BUDGET_TOLERANCE,
): BudgetFinding[] {
  const findings: BudgetFinding[] = [];
  const counted = budgetRows(rows);
  for (const [name, base] of Object.entries(budget.rows)) {
    const now = counted[name];
    if (now === undefined) {
      findings.push({ row: name, over: true, message: 'not counted in this run' });
      continue;
    }
    const growth = now.instructions / base.instructions - 1;
    const percent = `${growth >= 0 ? '+' : ''}${(growth * 100).toFixed(1)} %`;
    const instructions = `${fmt(base.instructions)} → ${fmt(now.instructions)} instructions (${percent})`;
    if (growth > tolerance.instructions)
      findings.push({
        row: name,
        over: true,
        message: `${instructions}, over the +${tolerance.instructions * 100} % budget`,
      });
    else if (growth < -tolerance.instructions)
      findings.push({ row: name, over: false, message: `${instructions}: record the gain` });
    for (const syscall of new Set([...Object.keys(base.syscalls), ...Object.keys(now.syscalls)])) {
      const before = base.syscalls[syscall] ?? 0;
      const after = now.syscalls[syscall] ?? 0;
      if (after - before >= tolerance.syscalls)
        findings.push({
          row: name,
          over: true,
          message: `${syscall} ${before} → ${after} per request: a system call more`,
        });
      else if (before - after >= tolerance.syscalls)
        findings.push({
          row: name,
          over: false,
          message: `${syscall} ${before} → ${after} per request: record the gain`,
        });
    }
  }
  for (const row of rows)
    if (budget.rows[row.name] === undefined)
      findings.push({ row: row.name, over: true, message: 'no baseline recorded for this kind' });
  return findings;
}

/**
 * A short digest of a baseline's counts (not of its formatting): the line of the record in
 * docs/performance.md that gives the reason for a baseline starts with it.
 */
export function budgetDigest(budget: Budget): string {
  const canonical = JSON.stringify({
    requests: budget.requests,
    warmup: budget.warmup,
    rows: Object.keys(budget.rows)
      .sort()
      .map((name) => {
        const row = budget.rows[name]!;
        const syscalls = Object.keys(row.syscalls)
          .sort()
          .map((syscall) => [syscall, row.syscalls[syscall]]);
        return [name, row.instructions, syscalls];
      }),
  });
  return createHash('sha256').update(canonical).digest('hex').slice(0, 12);
}

/** True when `record` (the docs page) has a record line naming `digest` with a reason after it. */
export function hasRecordLine(record: string, digest: string): boolean {
  return record
    .split('\n')
    .some((line) => new RegExp(`^\\|[^|]*\\|\\s*\`${digest}\`\\s*\\|\\s*\\S.*\\|\\s*$`).test(line));
}

/** Reads a baseline file's JSON, refusing a file of another shape with what is wrong. */
export function parseBudget(text: string, file: string): Budget {
  const value = JSON.parse(text) as Partial<Budget> | null;
  const problems: string[] = [];
  if (value === null || typeof value !== 'object') throw new TypeError(`${file}: not an object`);
  if (!Number.isSafeInteger(value.requests) || value.requests! <= 0)
    problems.push('"requests" must be a positive integer');
  if (!Number.isSafeInteger(value.warmup) || value.warmup! < 0)
    problems.push('"warmup" must be a whole number');
  if (value.rows === null || typeof value.rows !== 'object') problems.push('"rows" is missing');
  else
    for (const [name, row] of Object.entries(value.rows)) {
      if (!(row.instructions > 0)) problems.push(`"${name}": "instructions" must be positive`);
      if (row.syscalls === null || typeof row.syscalls !== 'object')
        problems.push(`"${name}": "syscalls" must map names to calls per request`);
    }
  if (problems.length > 0) throw new TypeError(`${file}: ${problems.join('; ')}`);
  return value as Budget;
}

/** The check's report: one line per finding, then the verdict. */
export function formatBudgetCheck(findings: readonly BudgetFinding[], failed: boolean): string {
  const lines = findings.map((f) => `  ${f.over ? 'OVER ' : 'under'}  ${f.row}: ${f.message}`);
  return [
    'budget:',
    ...(lines.length > 0 ? lines : ['  every kind within its baseline']),
    failed ? 'budget: FAILED' : 'budget: passed',
  ].join('\n');
}

function fmt(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

function round2(value: number): number {
  return Number(value.toFixed(2));
}

/** Where the baseline and its record live, relative to the repository. */
export const BUDGET_FILES = Object.freeze({
  nginx: 'perf/budget/nginx-counts.json',
  record: 'docs/performance.md',
});

/** The baseline file's text for `budget`: the form prettier keeps. */
export function formatBudgetFile(budget: Budget): string {
  return `${JSON.stringify(budget, null, 2)}\n`;
}

/**
 * The whole judgement of a run: over-budget findings, and a baseline whose digest has no line in
 * the record (a baseline changed without saying why fails like a count over budget).
 */
export function judgeBudget(
  budget: Budget,
  rows: readonly CountedRow[],
  record: string,
): { failed: boolean; report: string } {
  const findings = checkBudget(budget, rows);
  const digest = budgetDigest(budget);
  const recorded = hasRecordLine(record, digest);
  const failed = !recorded || findings.some((finding) => finding.over);
  const missing = recorded
    ? []
    : [
        `budget: the baseline \`${digest}\` has no line in ${BUDGET_FILES.record}'s budget record;`,
        `        add "| date | \`${digest}\` | why the counts moved |" to it`,
      ];
  return { failed, report: [...missing, formatBudgetCheck(findings, failed)].join('\n') };
}

// The counted budget CI gates on: judged against the baseline in the repository, with counts made
// worse on purpose (a synthetic count file, as `npm run bench:counts -- --json` writes it), and
// through the command CI runs, whose exit code is the verdict.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../stack/stack.js';
import {
  BUDGET_FILES,
  budgetDigest,
  checkBudget,
  hasRecordLine,
  judgeBudget,
  parseBudget,
  type Budget,
} from './count-budget.js';
import { COUNT_ROW_NAMES } from './count-run.js';
import type { CountRow } from './nginx-counts.js';

const budget = parseBudget(
  readFileSync(join(REPO_ROOT, BUDGET_FILES.nginx), 'utf8'),
  BUDGET_FILES.nginx,
);
const record = readFileSync(join(REPO_ROOT, BUDGET_FILES.record), 'utf8');
const CACHED = COUNT_ROW_NAMES.cached;

/** The baseline's counts as a run reports them, `change` applied to one row. */
function runOf(
  base: Budget,
  change: { row?: string; instructions?: number; syscalls?: Record<string, number> } = {},
): CountRow[] {
  return Object.entries(base.rows).map(([name, row]) => {
    const mine = name === change.row;
    const syscalls = { ...row.syscalls, ...(mine ? change.syscalls : {}) };
    const breakdown = Object.entries(syscalls).map(([call, perRequest]) => ({
      name: call,
      perRequest,
    }));
    return {
      name,
      requests: base.requests,
      instructions: row.instructions * (mine ? (change.instructions ?? 1) : 1),
      syscalls: { perRequest: breakdown.reduce((sum, b) => sum + b.perRequest, 0), breakdown },
    };
  });
}

describe('the counted budget of NGINX per request kind', () => {
  it('has a baseline for every counted kind, recorded with a reason in docs/performance.md', () => {
    expect(Object.keys(budget.rows).sort()).toEqual(Object.values(COUNT_ROW_NAMES).sort());
    expect(hasRecordLine(record, budgetDigest(budget))).toBe(true);
  });

  it('passes the baseline’s own counts, and growth within +2 % and under a call per request', () => {
    expect(judgeBudget(budget, runOf(budget), record).failed).toBe(false);
    const close = runOf(budget, { row: CACHED, instructions: 1.019, syscalls: { getpid: 1.3 } });
    expect(checkBudget(budget, close).filter((f) => f.over)).toEqual([]);
  });

  it('fails a cached /secret that costs 2.1 % more instructions, naming the kind and the growth', () => {
    const { failed, report } = judgeBudget(
      budget,
      runOf(budget, { row: CACHED, instructions: 1.021 }),
      record,
    );
    expect(failed).toBe(true);
    expect(report).toContain(`OVER   ${CACHED}: `);
    expect(report).toMatch(/\(\+2\.1 %\), over the \+2 % budget/);
    expect(report).toContain('budget: FAILED');
  });

  it('fails a kind that gains one system call per request, new or one more of a known one', () => {
    // sendfile: what `tcp_nopush` and a body from a file would bring back (docs above).
    const added = checkBudget(budget, runOf(budget, { row: CACHED, syscalls: { sendfile: 1 } }));
    expect(added).toEqual([
      { row: CACHED, over: true, message: 'sendfile 0 → 1 per request: a system call more' },
    ]);
    const pread = budget.rows[CACHED]!.syscalls.pread64!;
    const more = checkBudget(
      budget,
      runOf(budget, { row: CACHED, syscalls: { pread64: pread + 1 } }),
    );
    expect(more.map((f) => f.over)).toEqual([true]);
  });

  it('fails a kind with no baseline and a baseline kind that was not counted', () => {
    const run = runOf(budget);
    const renamed = [{ ...run[0]!, name: '/new-location' }, ...run.slice(1)];
    const findings = checkBudget(budget, renamed).filter((f) => f.over);
    expect(findings.map((f) => f.message).sort()).toEqual([
      'no baseline recorded for this kind',
      'not counted in this run',
    ]);
  });

  it('fails a baseline changed without its line in the record, whatever the counts', () => {
    const moved: Budget = {
      ...budget,
      rows: { ...budget.rows, [CACHED]: { ...budget.rows[CACHED]!, instructions: 99_999 } },
    };
    const { failed, report } = judgeBudget(moved, runOf(moved), record);
    expect(failed).toBe(true);
    expect(report).toContain(`the baseline \`${budgetDigest(moved)}\` has no line`);
    const recorded = `${record}\n| 2026-12-04 | \`${budgetDigest(moved)}\` | a test's reason |\n`;
    expect(judgeBudget(moved, runOf(moved), recorded).failed).toBe(false);
    // A digest alone, without the reason, is not a record.
    expect(
      hasRecordLine(`| 2026-12-04 | \`${budgetDigest(moved)}\` |  |`, budgetDigest(moved)),
    ).toBe(false);
  });

  it('reports kinds well under budget without failing, so the gain gets recorded', () => {
    const cheaper = checkBudget(budget, runOf(budget, { row: CACHED, instructions: 0.9 }));
    expect(cheaper).toHaveLength(1);
    expect(cheaper[0]).toMatchObject({ row: CACHED, over: false });
    expect(cheaper[0]!.message).toMatch(/-10\.0 %\): record the gain$/);
  });
});

describe('npm run bench:budget (the command CI runs)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'budget-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const judge = async (rows: CountRow[]) => {
    const file = join(dir, `counts-${Math.random()}.json`);
    writeFileSync(file, JSON.stringify({ rows }));
    return promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', join(REPO_ROOT, 'bench/counts.ts'), '--budget'],
      { cwd: REPO_ROOT, env: { ...process.env, SG_BUDGET_COUNTS: file } },
    ).then(
      ({ stdout }) => ({ code: 0, stdout }),
      (error: { code: number; stdout: string }) => ({ code: error.code, stdout: error.stdout }),
    );
  };

  it('exits 0 on today’s counts and 1 on a cached /secret 2.1 % dearer', async () => {
    const today = await judge(runOf(budget));
    expect(today.stdout).toContain('budget: passed');
    expect(today.code).toBe(0);
    const worse = await judge(runOf(budget, { row: CACHED, instructions: 1.021 }));
    expect(worse.stdout).toContain('budget: FAILED');
    expect(worse.code).toBe(1);
  });
});

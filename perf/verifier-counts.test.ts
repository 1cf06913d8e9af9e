// The verifier's counted budget: promises per `authorize()` call may not grow past the baseline in
// perf/budget/verifier-counts.json, and a changed baseline needs its line in the docs' record.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../stack/stack.js';
import { BUDGET_FILES, hasRecordLine } from './count-budget.js';
import {
  countVerifierPromises,
  VERIFIER_BUDGET_FILE,
  verifierBudgetDigest,
  VERIFIER_COUNT_ROWS,
  type VerifierBudget,
} from './verifier-counts.js';

const budget = JSON.parse(
  readFileSync(join(REPO_ROOT, VERIFIER_BUDGET_FILE), 'utf8'),
) as VerifierBudget;

describe('the verifier’s counted budget', () => {
  it('is recorded with a reason in docs/performance.md', () => {
    const record = readFileSync(join(REPO_ROOT, BUDGET_FILES.record), 'utf8');
    expect(hasRecordLine(record, verifierBudgetDigest(budget))).toBe(true);
  });

  it('creates no more promises per authorize() than its baseline, cached or new', async () => {
    const counted = await countVerifierPromises();
    for (const name of Object.values(VERIFIER_COUNT_ROWS)) {
      const allowed = budget.rows[name]?.promises;
      expect(allowed, `no baseline for "${name}" in ${VERIFIER_BUDGET_FILE}`).toBeDefined();
      expect(counted[name], `promises per call of "${name}"`).toBeLessThanOrEqual(allowed!);
    }
  });
});

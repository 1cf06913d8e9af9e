// The benchmark's rows as ratios to the NGINX ceiling, and the goals of the hot-path issues (14, 20)
// as met / missed.

export const ROW_NAMES = {
  ceiling: 'nginx return 200 (/hello, ceiling)',
  cached: '/secret, one cached token',
  cachedNoEdge: '/secret, one cached token, edge cache off',
  cachedDpop: '/secret, one cached DPoP token, a fresh proof each',
  distinct: '/secret, all-distinct tokens',
  studyNjs: 'study-njs /secret',
  studyNode: 'study-node /secret',
  njsVerify: 'njs-verify /secret',
} as const;

export interface BenchRow {
  readonly name: string;
  readonly rps: number;
  readonly p50_ms: number;
  readonly p99_ms: number;
  /** rps ÷ the ceiling's rps. */
  readonly ratio: number;
  /** CPU time each service of the system spent per request during the row: where the time goes. */
  readonly cpu_us?: Readonly<Record<string, number>>;
  /**
   * The machine's own cost of the signature the row verifies per request (a bare `crypto.verify`
   * in-process, same run), which the verifier's CPU is read against.
   */
  readonly crypto_floor_us?: number;
}

export interface BenchGoal {
  readonly goal: string;
  readonly value: number;
  readonly target: number;
  readonly met: boolean;
}

/** What a cached DPoP request may cost the verifier beyond verifying its proof's signature. */
export const DPOP_OVER_FLOOR_US = 40;

/** Adds each row's ratio to the ceiling row (which must be present and first). */
export function withRatios(rows: readonly Omit<BenchRow, 'ratio'>[]): BenchRow[] {
  const ceiling = rows.find((row) => row.name === ROW_NAMES.ceiling)?.rps;
  return rows.map((row) => ({ ...row, ratio: ceiling ? row.rps / ceiling : NaN }));
}

/**
 * The goals of the hot-path issues (14 and 20). "Ours" against the baselines is /secret with a
 * cached token — a signed-in user's SPA repeats its token — while all-distinct tokens are judged
 * against the ceiling, and a cached DPoP request by the verifier's CPU per request (at most).
 */
export function evaluateBenchGoals(rows: readonly BenchRow[]): BenchGoal[] {
  const rps = (name: string) => rows.find((row) => row.name === name)?.rps ?? NaN;
  const ceiling = rps(ROW_NAMES.ceiling);
  const cached = rps(ROW_NAMES.cached);
  const distinct = rps(ROW_NAMES.distinct);
  const dpop = rows.find((row) => row.name === ROW_NAMES.cachedDpop);
  const dpopVerifierUs = dpop?.cpu_us?.verifier ?? NaN;
  const dpopTarget = (dpop?.crypto_floor_us ?? NaN) + DPOP_OVER_FLOOR_US;
  const atLeast: [string, number, number][] = [
    ['/secret cached ≥ 0.4× the ceiling', cached / ceiling, 0.4],
    ['/secret all-distinct ≥ 0.15× the ceiling', distinct / ceiling, 0.15],
    ['/secret cached ≥ 3× study-njs', cached / rps(ROW_NAMES.studyNjs), 3],
    ['/secret cached ≥ 4× njs-verify', cached / rps(ROW_NAMES.njsVerify), 4],
  ];
  return [
    ...atLeast.map(([goal, value, target]) => ({ goal, value, target, met: value >= target })),
    {
      goal: `/secret cached DPoP: verifier CPU per request ≤ the proof's bare ES256 verify + ${DPOP_OVER_FLOOR_US} µs (${dpopTarget.toFixed(0)} µs)`,
      value: dpopVerifierUs,
      target: dpopTarget,
      met: dpopVerifierUs <= dpopTarget,
    },
  ];
}

function cpuColumn(row: BenchRow): string {
  return Object.entries(row.cpu_us ?? {})
    .filter(([, us]) => us >= 0.5)
    .map(([service, us]) => `${service} ${us.toFixed(0)}`)
    .join(' + ');
}

/** The human-readable table: rps, p50, p99, ratio, CPU per request, then the goals. */
export function formatBench(
  rows: readonly BenchRow[],
  goals: readonly BenchGoal[],
  notes: readonly string[],
): string {
  const width = Math.max(...rows.map((row) => row.name.length), 10);
  const lines = [
    `${'row'.padEnd(width)}  ${'req/s'.padStart(9)}  ${'p50 ms'.padStart(8)}  ${'p99 ms'.padStart(8)}  ${'× ceiling'.padStart(9)}  CPU µs per request`,
    ...rows.map(
      (row) =>
        `${row.name.padEnd(width)}  ${row.rps.toFixed(0).padStart(9)}  ${row.p50_ms.toFixed(2).padStart(8)}  ${row.p99_ms.toFixed(2).padStart(8)}  ${row.ratio.toFixed(3).padStart(9)}  ${cpuColumn(row)}`,
    ),
    '',
    'goals:',
    ...goals.map(
      (g) =>
        `  ${g.met ? 'met   ' : 'MISSED'}  ${g.goal}: ${Number.isFinite(g.value) ? g.value.toFixed(2) : 'n/a'}`,
    ),
    ...notes.map((note) => `note: ${note}`),
  ];
  return lines.join('\n');
}

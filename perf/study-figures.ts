// The figures the study (docs/study.md) published for its two gates (2500 users, 50/s, 5 minutes,
// 0.5 CPU and 400 MB containers on a 2-vCPU e2-medium), copied from its "Aggregated" rows.

export interface PublishedFigures {
  readonly name: string;
  readonly requests: number;
  readonly failures: number;
  readonly medianMs: number;
  readonly p95Ms: number;
  readonly p99Ms: number;
  readonly averageMs: number;
  readonly maxMs: number;
  readonly rps: number;
}

export const STUDY_FIGURES: readonly PublishedFigures[] = Object.freeze([
  {
    name: 'study NGINX + njs (published)',
    requests: 97_798,
    failures: 1_419,
    medianMs: 2_600,
    p95Ms: 7_000,
    p99Ms: 27_000,
    averageMs: 4_401.75,
    maxMs: 223_673,
    rps: 206.2,
  },
  {
    name: 'study Node.js (published)',
    requests: 83_622,
    failures: 2_758,
    medianMs: 2_100,
    p95Ms: 6_800,
    p99Ms: 134_000,
    averageMs: 5_152.66,
    maxMs: 268_630,
    rps: 185.2,
  },
]);

/** The study's best aggregate throughput, the yardstick of the "10×" goal. */
export const STUDY_BEST_RPS = 206.2;

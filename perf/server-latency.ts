// Latency as the gate saw it: NGINX's `$request_time` per path, read from our JSON access log after
// a run. Set beside locust's figures it splits a slow answer into time spent in the gate and time
// spent queued in the kernel or in a busy load generator.
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';

export interface ServerLatency {
  readonly path: string;
  readonly count: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

/** `$request_time` has millisecond resolution, so a count per millisecond is exact. */
type Histogram = Map<number, number>;

function percentile(histogram: Histogram, count: number, fraction: number): number {
  const rank = Math.ceil(count * fraction);
  let seen = 0;
  for (const ms of [...histogram.keys()].sort((a, b) => a - b)) {
    seen += histogram.get(ms)!;
    if (seen >= rank) return ms;
  }
  return NaN;
}

/** Adds one access-log line to the per-path histograms; lines that are not ours are skipped. */
export function recordLine(histograms: Map<string, Histogram>, line: string): void {
  let entry: { path?: unknown; request_time?: unknown };
  try {
    entry = JSON.parse(line) as typeof entry;
  } catch {
    return;
  }
  if (typeof entry.path !== 'string' || typeof entry.request_time !== 'number') return;
  const ms = Math.round(entry.request_time * 1000);
  let histogram = histograms.get(entry.path);
  if (!histogram) histograms.set(entry.path, (histogram = new Map<number, number>()));
  histogram.set(ms, (histogram.get(ms) ?? 0) + 1);
}

export function summarize(histograms: ReadonlyMap<string, Histogram>): ServerLatency[] {
  return [...histograms]
    .map(([path, histogram]) => {
      const count = [...histogram.values()].reduce((sum, n) => sum + n, 0);
      return {
        path,
        count,
        p50Ms: percentile(histogram, count, 0.5),
        p99Ms: percentile(histogram, count, 0.99),
        maxMs: Math.max(...histogram.keys()),
      };
    })
    .sort((a, b) => b.count - a.count);
}

/**
 * Streams the access log (a full run writes hundreds of MB) into per-path latency figures; with
 * byte offsets, only the part one generator's run wrote (a line cut at either end is skipped).
 */
export async function readServerLatency(
  accessLog: string,
  range: { readonly start?: number; readonly end?: number } = {},
): Promise<ServerLatency[]> {
  const histograms = new Map<string, Histogram>();
  const input = createReadStream(accessLog, {
    start: range.start ?? 0,
    ...(range.end === undefined ? {} : { end: Math.max(range.start ?? 0, range.end - 1) }),
  });
  const lines = createInterface({ input, crlfDelay: Infinity });
  for await (const line of lines) recordLine(histograms, line);
  return summarize(histograms);
}

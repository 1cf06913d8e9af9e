// Sustained pressure: a token-cache flood past its bound, and a soak at steady load. Both read
// the verifier's own /metrics (cache size, hits, RSS) and NGINX's RSS from /proc.
import {
  CACHE_MAX_BYTES,
  failures,
  mb,
  probeLoad,
  sleep,
  sumSeries,
  treeRss,
  validLoad,
  validTokens,
  verifierMetrics,
  type ChaosContext,
  type Verdict,
} from './chaos-kit.js';
import { formatStatuses, startLoad } from './load.js';

const hitRatio = (m: Map<string, number>) => ({
  hits: m.get('verifier_cache_lookups_total{outcome="hit"}') ?? 0,
  all: sumSeries(m, 'verifier_cache_lookups_total'),
});

/**
 * Push `floodFactor` × the entry bound of distinct valid tokens through the gate beside a small
 * hot set. Expected: entries and bytes within the configured bounds, verifier RSS growth bounded,
 * the hot set's hit rate back above 90 % right after, and zero failures.
 */
export async function floodTokenCache(ctx: ChaosContext): Promise<Verdict> {
  const { gate, timing } = ctx;
  const hot = await validTokens(gate, 10);
  const distinct = await validTokens(gate, Math.round(ctx.cacheMaxEntries * timing.floodFactor));
  let h = 0;
  const load = validLoad(ctx, () => hot[h++ % hot.length]!, 'hot');
  await sleep(timing.settle * 1000);
  const before = await verifierMetrics(gate);
  let d = 0;
  const flood = startLoad({
    name: 'flood',
    url: gate.stack.urls.secret,
    concurrency: timing.concurrency,
    headers: () => ({ authorization: `Bearer ${distinct[d++ % distinct.length]!}` }),
    secretValues: [],
  });
  while (d < distinct.length) await sleep(100);
  const floodSummary = await flood.stop();
  const peak = await verifierMetrics(gate);
  await sleep(timing.settle * 1000);
  const after = await verifierMetrics(gate);
  const valid = await load.stop();

  const entries = peak.get('verifier_cache_entries') ?? NaN;
  const bytes = peak.get('verifier_cache_bytes') ?? NaN;
  const rssBefore = before.get('verifier_process_resident_memory_bytes') ?? NaN;
  const rssAfter = after.get('verifier_process_resident_memory_bytes') ?? NaN;
  const [p, a] = [hitRatio(peak), hitRatio(after)];
  const recovered = (a.hits - p.hits) / Math.max(1, a.all - p.all);
  const growth = rssAfter - rssBefore;
  return {
    scenario: `decision cache flooded with ${distinct.length} distinct tokens`,
    pass:
      entries <= ctx.cacheMaxEntries &&
      bytes <= CACHE_MAX_BYTES &&
      growth < 64 * 1024 * 1024 &&
      recovered >= 0.9 &&
      failures(valid) === 0 &&
      failures(floodSummary) === 0,
    figures: [
      `cache entries ${entries} / bound ${ctx.cacheMaxEntries}, bytes ${mb(bytes)} / ${mb(CACHE_MAX_BYTES)}`,
      `verifier RSS ${mb(rssBefore)} → ${mb(rssAfter)}`,
      `hot-set hit rate after the flood ${(recovered * 100).toFixed(1)} %`,
      `flood ${floodSummary.total} (${formatStatuses(floodSummary.byStatus)}), hot ${valid.total} (${formatStatuses(valid.byStatus)})`,
    ],
  };
}

/**
 * Steady load for `soakSeconds` with a rolling token set. Expected: zero failures, and verifier and
 * NGINX RSS in the last quarter within 10 % of the second quarter (after warm-up).
 */
export async function soak(ctx: ChaosContext): Promise<Verdict> {
  const { gate, timing } = ctx;
  const tokens = await validTokens(gate, 200);
  let n = 0;
  const load = validLoad(ctx, () => tokens[n++ % tokens.length]!);
  const probes = probeLoad(ctx);
  const rss: Array<{ verifier: number; nginx: number }> = [];
  const started = Date.now();
  const step = Math.max(1000, (timing.soakSeconds * 1000) / 40);
  while (Date.now() - started < timing.soakSeconds * 1000) {
    await sleep(step);
    const metrics = await verifierMetrics(gate);
    rss.push({
      verifier: metrics.get('verifier_process_resident_memory_bytes') ?? NaN,
      nginx: treeRss(gate.nginxPid()),
    });
  }
  const valid = await load.stop();
  const invalid = await probes.stop();
  const quarter = Math.max(1, Math.floor(rss.length / 4));
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] ?? NaN;
  const window = (from: number, to: number, key: 'verifier' | 'nginx') =>
    median(rss.slice(from, to).map((r) => r[key]));
  const drift = (key: 'verifier' | 'nginx') => {
    const early = window(quarter, 2 * quarter, key);
    const late = window(rss.length - quarter, rss.length, key);
    return { early, late, change: (late - early) / early };
  };
  const [v, x] = [drift('verifier'), drift('nginx')];
  const rate = valid.total / valid.seconds;
  return {
    scenario: `soak ${(timing.soakSeconds / 60).toFixed(timing.soakSeconds < 60 ? 1 : 0)} min`,
    pass:
      failures(valid) === 0 &&
      invalid.withSecret === 0 &&
      Math.abs(v.change) <= 0.1 &&
      Math.abs(x.change) <= 0.1,
    figures: [
      `valid ${valid.total} at ${rate.toFixed(0)} req/s (${formatStatuses(valid.byStatus)})`,
      `verifier RSS ${mb(v.early)} → ${mb(v.late)} (${(v.change * 100).toFixed(1)} %)`,
      `NGINX RSS ${mb(x.early)} → ${mb(x.late)} (${(x.change * 100).toFixed(1)} %)`,
      `invalid probes ${invalid.total}, secrets ${invalid.withSecret}`,
    ],
  };
}

import { describe, expect, it } from 'vitest';
import { createMetrics } from './metrics.js';

const counted = async (metrics: ReturnType<typeof createMetrics>, name: string) =>
  (await metrics.render()).split('\n').filter((line) => line.startsWith(`${name}{`));

describe('the hot-path counters', () => {
  it('count every bump under its own labels, in runs and interleaved alike', async () => {
    const metrics = createMetrics({ size: 0, bytes: 0 }, new Map(), false);
    for (const reason of [
      'allowed',
      'allowed',
      'token_expired',
      'allowed',
      'token_expired',
    ] as const)
      metrics.decision(reason);
    for (let i = 0; i < 3; i++) metrics.cacheLookup('hit');
    metrics.cacheLookup('miss');
    expect(await counted(metrics, 'verifier_decisions_total')).toEqual([
      'verifier_decisions_total{result="allow",reason="allowed"} 3',
      'verifier_decisions_total{result="deny_401",reason="token_expired"} 2',
    ]);
    expect(await counted(metrics, 'verifier_cache_lookups_total')).toEqual([
      'verifier_cache_lookups_total{outcome="hit"} 3',
      'verifier_cache_lookups_total{outcome="miss"} 1',
    ]);
    // A scrape hands the pending counts over once: the next one adds only what came since.
    metrics.decision('allowed');
    expect(await counted(metrics, 'verifier_decisions_total')).toContain(
      'verifier_decisions_total{result="allow",reason="allowed"} 4',
    );
  });
});

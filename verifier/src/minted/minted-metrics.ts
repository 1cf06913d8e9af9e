// How minted sets were served, per policy: from the cache, from a mint in flight for the same
// user, or minted (the goal: ≥ 99 % from the cache under a steady load; docs/performance.md).
import { Counter, type Registry } from 'prom-client';
import type { MintSource } from './minted-cache.js';

export function createMintedMetrics(registry: Registry) {
  const served = new Counter({
    name: 'verifier_minted_sets_total',
    help: 'Minted sets handed out, by policy and by source (cache, shared: another fetch minted it, minted)',
    labelNames: ['policy', 'source'] as const,
    registers: [registry],
  });
  return (policy: string) => (source: MintSource) => served.inc({ policy, source });
}

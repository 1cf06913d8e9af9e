import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createPlainHistogram } from './plain-histogram.js';

const BUCKETS = [0.0001, 0.001, 0.01, 0.1, 1];

/** Both histograms fed the same values, and each registry's exposition. */
async function exposed(values: readonly number[]) {
  const plainRegistry = new Registry();
  const promRegistry = new Registry();
  const plain = createPlainHistogram({
    name: 'h_seconds',
    help: 'A histogram.',
    buckets: BUCKETS,
    registry: plainRegistry,
  });
  const prom = new Histogram({
    name: 'h_seconds',
    help: 'A histogram.',
    buckets: BUCKETS,
    registers: [promRegistry],
  });
  for (const value of values) {
    plain.observe(value);
    prom.observe(value);
  }
  return { plain: await plainRegistry.metrics(), prom: await promRegistry.metrics() };
}

describe('the plain histogram', () => {
  it('is scraped exactly as prom-client exposes its own Histogram fed the same values', async () => {
    const values = [0, 0.00005, 0.0001, 0.00011, 0.003, 0.05, 0.1, 0.99, 1, 2.5, 40];
    const { plain, prom } = await exposed(values);
    expect(plain).toBe(prom);
    expect(plain).toContain('h_seconds_bucket{le="0.0001"} 3');
    expect(plain).toContain('h_seconds_bucket{le="+Inf"} 11');
    expect(plain).toContain('h_seconds_count 11');
  });

  it('shows every bucket at zero before the first observation', async () => {
    const { plain, prom } = await exposed([]);
    expect(plain).toBe(prom);
    expect(plain).toContain('h_seconds_bucket{le="1"} 0');
  });

  it('keeps counting across scrapes (cumulative, as Prometheus expects)', async () => {
    const registry = new Registry();
    const histogram = createPlainHistogram({
      name: 'h_seconds',
      help: 'A histogram.',
      buckets: BUCKETS,
      registry,
    });
    histogram.observe(0.002);
    await registry.metrics();
    histogram.observe(0.5);
    const text = await registry.metrics();
    expect(text).toContain('h_seconds_count 2');
    expect(text).toContain('h_seconds_bucket{le="0.01"} 1');
    expect(text).toContain('h_seconds_sum 0.502');
  });
});

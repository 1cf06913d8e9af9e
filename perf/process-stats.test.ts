// The per-service sampler the bench and the stress runner read CPU, waits and memory from.
import { describe, expect, it } from 'vitest';
import { createUsageSampler } from './process-stats.js';

describe('the usage sampler', () => {
  it('measures a busy process: its CPU, its window, and a wait that never exceeds the window', async () => {
    const sampler = createUsageSampler(new Map([['self', [process.pid]]]), 50);
    const until = performance.now() + 300;
    while (performance.now() < until) Math.sqrt(Math.random());
    await new Promise((resolve) => setTimeout(resolve, 60));
    const [usage] = sampler.stop();
    expect(usage!.name).toBe('self');
    expect(usage!.cpuSeconds).toBeGreaterThan(0);
    expect(usage!.wallSeconds).toBeGreaterThanOrEqual(0.3);
    expect(usage!.waitSeconds).toBeGreaterThanOrEqual(0);
    expect(usage!.peakRssBytes).toBeGreaterThan(0);
  });
});

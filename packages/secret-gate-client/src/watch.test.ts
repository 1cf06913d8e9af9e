import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createSecretGateClient, type SetResult } from './client.js';
import { mintedAnswer, startGateServer, type GateServer } from './gate-server.fixture.js';
import { watchSet } from './watch.js';

let gate: GateServer;

beforeAll(async () => {
  gate = await startGateServer();
});
afterAll(() => gate.close());
beforeEach(() => {
  gate.seen.length = 0;
  // Only the renewal timers are fake; the HTTP exchange with the real server runs as it is.
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
});
afterEach(() => {
  vi.useRealTimers();
});

/** A gate that mints `algolia-key` anew on every fetch, living `lifetime` seconds. */
function mintingGate(lifetime: number) {
  gate.answer((_request, index) =>
    mintedAnswer(
      { 'x-api-key': 'static' },
      { 'algolia-key': `alg-${index + 1}` },
      {
        'algolia-key': lifetime,
      },
    ),
  );
}

function watching(options: { lifetime?: number; now?: () => number } = {}) {
  let n = 0;
  const gateClient = createSecretGateClient({
    url: gate.url,
    getCredentials: () => `token-${++n}`,
    ...(options.now ? { now: options.now } : {}),
  });
  const results: SetResult[] = [];
  const watch = watchSet(gateClient, { onResult: (result) => results.push(result) }, options.now);
  const values = () => results.map((r) => (r.ok ? r.set.values['algolia-key'] : r.error.code));
  return { watch, results, values, tokens: () => n };
}

describe('watchSet', () => {
  it('renews a minted value 10 % of its lifetime before it expires, with a fresh token', async () => {
    mintingGate(100);
    const { watch, values } = watching();
    await vi.waitFor(() => expect(values()).toEqual(['alg-1']));
    await vi.advanceTimersByTimeAsync(89_500);
    expect(gate.seen).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1_000);
    await vi.waitFor(() => expect(values()).toEqual(['alg-1', 'alg-2']));
    expect(gate.seen.map((r) => r.headers.authorization)).toEqual([
      'Bearer token-1',
      'Bearer token-2',
    ]);
    watch.stop();
  });

  it('keeps at least 5 seconds of margin for short-lived values', async () => {
    mintingGate(20);
    const { watch, values } = watching();
    await vi.waitFor(() => expect(values()).toEqual(['alg-1']));
    await vi.advanceTimersByTimeAsync(14_500);
    expect(gate.seen).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1_000);
    await vi.waitFor(() => expect(values()).toEqual(['alg-1', 'alg-2']));
    watch.stop();
  });

  it('renews on time when the page clock is ten minutes off the gate', async () => {
    mintingGate(100);
    const { watch, values, results } = watching({ now: () => Date.now() + 600_000 });
    await vi.waitFor(() => expect(values()).toEqual(['alg-1']));
    expect(results[0]?.ok && results[0].set.gateClockOffset).toBeCloseTo(-600, -1);
    await vi.advanceTimersByTimeAsync(89_500);
    expect(gate.seen).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1_000);
    await vi.waitFor(() => expect(values()).toEqual(['alg-1', 'alg-2']));
    watch.stop();
  });

  it('fetches a static set once and never again', async () => {
    gate.answer(() => ({ body: { 'x-api-key': 'static' } }));
    const { watch, results } = watching();
    await vi.waitFor(() => expect(results).toHaveLength(1));
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(gate.seen).toHaveLength(1);
    watch.stop();
  });

  it('retries a renewal the gate could not serve after its Retry-After, and stops on a 401', async () => {
    gate.answer((_request, index) => {
      if (index === 0) return mintedAnswer({}, { 'algolia-key': 'alg-1' }, { 'algolia-key': 60 });
      if (index === 1) return { status: 503, headers: { 'Retry-After': '3' } };
      return {
        status: 401,
        headers: { 'WWW-Authenticate': 'Bearer realm="g", error="invalid_token"' },
      };
    });
    const { watch, values } = watching();
    await vi.waitFor(() => expect(values()).toEqual(['alg-1']));
    await vi.advanceTimersByTimeAsync(54_100);
    await vi.waitFor(() => expect(values()).toEqual(['alg-1', 'unavailable']));
    await vi.advanceTimersByTimeAsync(2_800);
    expect(gate.seen).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(300);
    await vi.waitFor(() => expect(values()).toEqual(['alg-1', 'unavailable', 'unauthorized']));
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(gate.seen).toHaveLength(3);
    watch.stop();
  });

  it('reports nothing and fetches nothing after stop, even for a fetch in flight', async () => {
    gate.answer(() => ({ ...mintedAnswer({}, { k: 'v' }, { k: 30 }), delayMs: 300 }));
    const { watch, results } = watching();
    await vi.waitFor(() => expect(gate.seen).toHaveLength(1));
    watch.stop();
    await new Promise((resolve) => setImmediate(resolve));
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(results).toEqual([]);
    expect(gate.seen).toHaveLength(1);
  });

  it('refresh fetches at once and moves the next renewal', async () => {
    mintingGate(100);
    const { watch, values } = watching();
    await vi.waitFor(() => expect(values()).toEqual(['alg-1']));
    await vi.advanceTimersByTimeAsync(50_000);
    await watch.refresh();
    expect(values()).toEqual(['alg-1', 'alg-2']);
    await vi.advanceTimersByTimeAsync(45_000);
    expect(gate.seen).toHaveLength(2);
    watch.stop();
  });
});

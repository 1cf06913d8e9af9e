// W3C Trace Context at the edge (nginx/templates/snippets/trace-*.conf): the rendered templates
// under the real nginx, in front of the stand-in verifier that records what NGINX sends it. One
// trace id from the client's `traceparent` (or from $request_id) in the verifier's header and the
// access log; malformed headers ignored, a client's tracestate never forwarded; the client's
// sampled flag not trusted unless configured.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../stack/ports.js';
import { startLocalNginx } from '../../stack/nginx/local-nginx.js';
import { localNginxEnv, type LocalNginxOptions } from '../../stack/nginx/render.js';
import { contractTokens, startContractVerifier } from '../nginx/contract-verifier.js';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-(0[01])$/;
const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';

interface LogLine {
  readonly path: string;
  readonly status: number;
  readonly request_id: string;
  readonly trace_id: string;
  readonly span_id: string;
  readonly edge_cache: string;
  readonly policy: string;
  readonly reason: string;
}

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** NGINX rendered with `options` in front of a fresh stand-in verifier. */
async function startSite(options: Partial<LocalNginxOptions> = {}) {
  const verifierPort = await freePort();
  const verifier = await startContractVerifier(verifierPort);
  cleanups.push(() => verifier.close());
  const work = await mkdtemp(path.join(tmpdir(), 'sg-trace-'));
  await chmod(work, 0o755);
  const prefix = path.join(work, 'prefix');
  const env = localNginxEnv({
    prefix,
    listen: `127.0.0.1:${await freePort()}`,
    verifierAddr: `127.0.0.1:${verifierPort}`,
    workerProcesses: 1,
    secretRate: '1000r/s',
    traceContext: 'on',
    ...options,
  });
  const nginx = await startLocalNginx({ prefix, env });
  cleanups.push(async () => {
    await nginx.stop();
    await rm(work, { recursive: true, force: true });
  });
  const readLog = async () =>
    (await nginx.accessLog()).split('\n').filter((line) => line.length > 0);
  /** GET `path` with `headers`; the traceparent the verifier got (if any) and the log line. */
  async function call(route: string, headers: Record<string, string> = {}) {
    const before = verifier.received.length;
    const logged = (await readLog()).length;
    const response = await fetch(`${nginx.baseUrl}${route}`, { headers });
    await response.text();
    const forwarded = verifier.received.slice(before).map((r) => r.headers);
    const sent = forwarded.map((headers) => headers.traceparent);
    // NGINX writes the line after answering: wait for it.
    let lines = await readLog();
    for (let i = 0; i < 100 && lines.length <= logged; i++) {
      await sleep(20);
      lines = await readLog();
    }
    const log = JSON.parse(lines.at(-1) ?? '{}') as LogLine;
    return { status: response.status, sent: sent[0] as string | undefined, log, forwarded };
  }
  return { call, verifier, url: nginx.baseUrl };
}

function parts(traceparent: string | undefined) {
  const match = TRACEPARENT.exec(traceparent ?? '');
  if (match === null) throw new Error(`not a traceparent: ${traceparent}`);
  return { trace: match[1] as string, span: match[2] as string, flags: match[3] as string };
}

const bearer = (token: string, more: Record<string, string> = {}) => ({
  authorization: `Bearer ${token}`,
  ...more,
});

describe('trace context at the edge (SG_TRACE_CONTEXT=on)', () => {
  let site: Awaited<ReturnType<typeof startSite>>;
  beforeAll(async () => {
    site = await startSite({ traceSamplePercent: 0 });
  });

  it("continues a client's valid traceparent: same trace id, NGINX's own span id, in the verifier's header and the access log", async () => {
    const { status, sent, log } = await site.call('/secret', {
      ...bearer(contractTokens.spaDemo),
      traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`,
    });
    expect(status).toBe(200);
    const { trace, span } = parts(sent);
    expect(trace).toBe(CLIENT_TRACE);
    expect(span).not.toBe(CLIENT_SPAN);
    expect(log).toMatchObject({ trace_id: CLIENT_TRACE, span_id: span, policy: 'secret' });
  });

  it('starts a fresh trace from $request_id when the client sends none', async () => {
    const { sent, log } = await site.call('/secret', bearer(contractTokens.spaDemo));
    const { trace, span } = parts(sent);
    expect(trace).toBe(log.request_id);
    expect(log).toMatchObject({ trace_id: trace, span_id: span });
  });

  it.each([
    ['wrong length', `00-${CLIENT_TRACE}-${CLIENT_SPAN}-011`],
    ['upper-case hex', `00-${CLIENT_TRACE.toUpperCase()}-${CLIENT_SPAN}-01`],
    ['bad hex', `00-${CLIENT_TRACE.slice(0, 31)}g-${CLIENT_SPAN}-01`],
    ['version ff', `ff-${CLIENT_TRACE}-${CLIENT_SPAN}-01`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${CLIENT_SPAN}-01`],
    ['an all-zero parent id', `00-${CLIENT_TRACE}-${'0'.repeat(16)}-01`],
    ['10 kB', `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01${'-ab'.repeat(3400)}`],
  ])(
    'ignores a traceparent with %s: a fresh trace, the request answered as without',
    async (_, value) => {
      const { status, sent, log } = await site.call('/secret', {
        ...bearer(contractTokens.spaDemo),
        traceparent: value,
        tracestate: 'vendor=' + 'x'.repeat(600),
      });
      expect(status).toBe(200);
      const { trace } = parts(sent);
      expect(trace).not.toBe(CLIENT_TRACE);
      expect(log.trace_id).toBe(log.request_id);
    },
  );

  it.each([
    ['10 kB', `vendor=${'x'.repeat(10_240)}`],
    ['bad characters', 'Vendor Key=a=b,,=;!@#$%^&*()'],
    ['more than 32 members', Array.from({ length: 40 }, (_, i) => `k${i}=v${i}`).join(',')],
  ])(
    "continues a valid traceparent next to a tracestate of %s, and never sends the client's tracestate on",
    async (_, tracestate) => {
      const { status, sent, log, forwarded } = await site.call('/secret', {
        ...bearer(contractTokens.spaDemo),
        traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`,
        tracestate,
      });
      expect(status).toBe(200);
      expect(parts(sent).trace).toBe(CLIENT_TRACE);
      expect(log).toMatchObject({ status: 200, trace_id: CLIENT_TRACE, policy: 'secret' });
      expect(forwarded).toHaveLength(1);
      expect(forwarded[0]).not.toHaveProperty('tracestate');
    },
  );

  it('continues a later version of the header, reading only its known fields', async () => {
    const { sent } = await site.call('/secret', {
      ...bearer(contractTokens.spaDemo),
      traceparent: `01-${CLIENT_TRACE}-${CLIENT_SPAN}-01-what-comes-later`,
    });
    expect(parts(sent).trace).toBe(CLIENT_TRACE);
  });

  it("does not trust a client's sampled flag: NGINX's share (0 % here) decides", async () => {
    const { sent } = await site.call('/secret', {
      ...bearer(contractTokens.spaDemo),
      traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`,
    });
    expect(parts(sent).flags).toBe('00');
  });

  it('logs the edge cache status: a miss, then a hit for the same token', async () => {
    const first = await site.call('/secret', bearer(contractTokens.cached));
    const second = await site.call('/secret', bearer(contractTokens.cached));
    expect(['MISS', 'HIT']).toContain(first.log.edge_cache);
    expect(second.log.edge_cache).toBe('HIT');
    expect(second.sent).toBeUndefined();
    expect(second.log.trace_id).toBe(second.log.request_id);
  });

  it('sends the traceparent on the revocation receivers too', async () => {
    const before = site.verifier.received.length;
    await fetch(`${site.url}/backchannel-logout`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`,
      },
      body: 'logout_token=x',
    });
    const pushed = site.verifier.received.slice(before);
    expect(pushed.map((r) => r.url)).toEqual(['/backchannel-logout']);
    expect(parts(pushed[0]?.headers.traceparent as string).trace).toBe(CLIENT_TRACE);
  });
});

describe('the sampled flag NGINX sends', () => {
  it('marks about SG_TRACE_SAMPLE_PERCENT of the traces sampled, however many clients forge 01', async () => {
    const site = await startSite({ traceSamplePercent: 25 });
    let sampled = 0;
    const total = 200;
    for (let i = 0; i < total; i++) {
      const trace = (BigInt(i + 1) * 0x9e3779b97f4a7c15n).toString(16).padStart(32, '7');
      const { sent } = await site.call('/secret', {
        ...bearer(contractTokens.spaDemo),
        traceparent: `00-${trace}-${CLIENT_SPAN}-01`,
      });
      if (parts(sent).flags === '01') sampled++;
    }
    // 25 % of 200 is 50; a binomial draw stays within ±25 of it far more often than 1 in 10^6.
    expect(sampled).toBeGreaterThan(25);
    expect(sampled).toBeLessThan(75);
  });

  it("keeps a client's sampled bit with SG_TRACE_TRUST_CLIENT_SAMPLED=on, and samples every fresh trace at 100 %", async () => {
    const site = await startSite({ traceTrustClientSampled: 'on' });
    const header = (flags: string) => ({
      ...bearer(contractTokens.spaDemo),
      traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-${flags}`,
    });
    expect(parts((await site.call('/secret', header('00'))).sent).flags).toBe('00');
    expect(parts((await site.call('/secret', header('03'))).sent).flags).toBe('01');
    expect(parts((await site.call('/secret', bearer(contractTokens.spaDemo))).sent).flags).toBe(
      '01',
    );
  });

  it('keeps no sampled bit from a malformed traceparent with SG_TRACE_TRUST_CLIENT_SAMPLED=on: NGINX decides', async () => {
    const site = await startSite({ traceTrustClientSampled: 'on', traceSamplePercent: 0 });
    const call = async (traceparent: string) =>
      parts((await site.call('/secret', bearer(contractTokens.spaDemo, { traceparent }))).sent);
    expect((await call(`00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`)).flags).toBe('01');
    for (const malformed of [
      `00-${CLIENT_TRACE.toUpperCase()}-${CLIENT_SPAN}-01`,
      `ff-${CLIENT_TRACE}-${CLIENT_SPAN}-01`,
      `00-${'0'.repeat(32)}-${CLIENT_SPAN}-01`,
      `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01-more`,
    ]) {
      const { trace, flags } = await call(malformed);
      expect(trace).not.toBe(CLIENT_TRACE);
      expect(flags, malformed).toBe('00');
    }
  });
});

describe('SG_TRACE_CONTEXT=off', () => {
  it('sends no traceparent and writes the access log without trace fields', async () => {
    const site = await startSite({ traceContext: 'off' });
    const { status, sent, log } = await site.call('/secret', {
      ...bearer(contractTokens.spaDemo),
      traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`,
    });
    expect(status).toBe(200);
    expect(sent).toBeUndefined();
    for (const field of ['trace_id', 'span_id', 'edge_cache', 'policy', 'reason'])
      expect(log).not.toHaveProperty(field);
    expect(log).toHaveProperty('request_id');
  });
});

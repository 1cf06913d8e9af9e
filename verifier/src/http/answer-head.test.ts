import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../config/load.js';
import type { VerifyRequest } from '../decision/decision.js';
import { createVerifierService } from '../service.js';
import { startTracing } from '../tracing/otel.js';
import { captureLogger } from '../testing/fixtures.js';
import { allow } from '../decision/decision.js';
import { withHead } from './answer-head.js';
import { createTransport, type Routes } from './transport.js';
import { renderDecision, type VerifyAnswer } from './verify-answer.js';

const identity = {
  sub: 'user-1',
  client: 'spa-demo',
  scopes: ['secrets:read'],
  issuer: 'https://a',
};
const NGINX_HEADERS = [
  'Host: sg_verifier',
  'Authorization: Bearer abc.def.ghi',
  'X-SG-Policy: default',
  'X-Original-URI: /secret',
  'X-Original-Method: GET',
  'DPoP: proof',
  'X-Original-Origin: https://app.test',
  'traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
];

/** The raw bytes of the answer to one GET /verify (no body: 204s, or `Content-Length: 0`). */
function exchange(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () =>
      socket.write(`GET /verify HTTP/1.1\r\n${NGINX_HEADERS.join('\r\n')}\r\n\r\n`),
    );
    let seen = '';
    socket.setEncoding('latin1');
    socket.on('error', reject);
    socket.on('data', (chunk: string) => {
      seen += chunk;
      if (!seen.includes('\r\n\r\n')) return;
      socket.destroy();
      // uWS's own `Date` line differs from second to second.
      resolve(seen.replace(/\r\nDate: [^\r]*/, ''));
    });
  });
}

const transports: ReturnType<typeof createTransport>[] = [];
afterEach(async () => {
  for (const transport of transports.splice(0)) await transport.close(0);
});

async function serve(parts: Partial<Routes> & Pick<Routes, 'verify'>): Promise<number> {
  const transport = createTransport({ pages: new Map(), receivers: new Map(), ...parts });
  transports.push(transport);
  return transport.listen({ kind: 'tcp', host: '127.0.0.1', port: 0 });
}

describe('a prepared answer head', () => {
  it('puts on the wire the same bytes as the status and each header written one by one', async () => {
    const headers = renderDecision({ ...allow(identity), edgeTtl: 5 }).headers;
    const plain: VerifyAnswer = { status: 204, headers };
    const prepared = withHead({ status: 204 as const, headers });
    expect(prepared).toEqual(plain);
    const written = await Promise.all(
      [plain, prepared].map(async (answer) =>
        exchange(await serve({ verify: () => allow(identity), render: () => answer })),
      ),
    );
    expect(written[0]).toMatch(
      /^HTTP\/1\.1 204 No Content\r\nX-Accel-Expires: 5\r\nX-Auth-Client: spa-demo\r\n/,
    );
    expect(written[1]).toBe(written[0]);
  });

  it('refuses a header value with a line break (it would be a header of its own)', () => {
    expect(() =>
      withHead({ status: 204, headers: [['X-Auth-Client', 'a\r\nX-Auth-Set: b']] }),
    ).toThrow(new TypeError('header "X-Auth-Client" holds a line break'));
  });

  it('is what a cached allow is written with: the same answer object, prepared once', () => {
    const decision = { ...allow(identity), edgeTtl: 7 };
    const first = renderDecision(decision) as VerifyAnswer & { head?: ArrayBuffer };
    expect(first.head).toBeInstanceOf(ArrayBuffer);
    expect(renderDecision({ ...decision, identity: { ...identity, sub: 'user-2' } })).toBe(first);
  });
});

describe('what /verify reads of a request', () => {
  async function seen(readsWhole: Routes['readsWhole']): Promise<VerifyRequest> {
    const requests: VerifyRequest[] = [];
    const port = await serve({
      verify: (request) => {
        requests.push(request);
        return allow(identity);
      },
      readsWhole,
    });
    await exchange(port);
    return requests[0]!;
  }

  it('reads every header NGINX sends when nothing says otherwise', async () => {
    expect(await seen(undefined)).toEqual({
      policy: 'default',
      authorization: 'Bearer abc.def.ghi',
      originalUri: '/secret',
      originalMethod: 'GET',
      dpop: 'proof',
      originalOrigin: 'https://app.test',
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    });
  });

  it('reads only the credentials and the trace context for a policy nothing else reads', async () => {
    const asked: (string | undefined)[] = [];
    const request = await seen((policy) => {
      asked.push(policy);
      return false;
    });
    expect(asked).toEqual(['default']);
    expect(request).toEqual({
      policy: 'default',
      authorization: 'Bearer abc.def.ghi',
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    });
  });
});

describe('which requests the service reads whole', () => {
  const file = {
    issuers: [{ issuer: 'https://idp.test', audience: 'api', jwksUri: 'https://idp.test/jwks' }],
    policies: {
      default: { issuers: ['https://idp.test'] },
      proofs: { issuers: ['https://idp.test'], dpop: 'allowed' },
    },
  };
  const readsWhole = (level: 'warn' | 'info') => {
    const config = loadConfig({ VERIFIER_CONFIG: '/x.json' }, () => JSON.stringify(file));
    const { logger } = captureLogger(level);
    return createVerifierService(config, { logger, defaultMetrics: false }).routes.readsWhole!;
  };

  it('below info: only a DPoP policy’s (its proof, origin, method and path are checked)', () => {
    const whole = readsWhole('warn');
    expect([whole('proofs'), whole('default'), whole(undefined), whole('unknown')]).toEqual([
      true,
      false,
      false,
      false,
    ]);
  });

  it('at info: every request’s, for its decision log line (method and path)', () => {
    const whole = readsWhole('info');
    expect([whole('default'), whole(undefined)]).toEqual([true, true]);
  });

  it('with tracing on, below info: a decision’s it records, not one NGINX left unsampled', async () => {
    const config = loadConfig({ VERIFIER_CONFIG: '/x.json' }, () => JSON.stringify(file));
    const tracing = await startTracing({ protocol: 'http/json', serviceName: 'test' });
    try {
      const { logger } = captureLogger('warn');
      const whole = createVerifierService(config, { logger, defaultMetrics: false, tracing }).routes
        .readsWhole!;
      const trace = (flags: string) => `00-${'ab'.repeat(16)}-00f067aa0ba902b7-${flags}`;
      expect([
        whole('default', trace('00')),
        whole('default', trace('01')),
        whole('default', undefined),
        whole('proofs', trace('00')),
      ]).toEqual([false, true, true, true]);
    } finally {
      await tracing.shutdown();
    }
  });
});

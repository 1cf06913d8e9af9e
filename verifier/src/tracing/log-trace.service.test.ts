import { afterEach, describe, expect, it } from 'vitest';
import {
  AUDIENCE,
  ISSUER,
  mintToken,
  startJwksServer,
  type JwksServer,
} from '../testing/fixtures.js';
import { buildService, type TestService } from '../testing/service.js';

// The log trace through the real decision path: the token verifier, its key sets and the
// decision log, with a key set fetched over HTTP when a decision has to wait for it.

const OTHER = 'https://other.test';
const A = '4bf92f3577b34da6a3ce929d0e0e4736';
const B = '0af7651916cd43dd8448eb211c80319c';
const C = 'c1c2c3c4c5c6c7c8c9cacbcccdcecfd0';
const traceparent = (traceId: string) => `00-${traceId}-00f067aa0ba902b7-01`;

const servers: JwksServer[] = [];
const gates: TestService[] = [];
afterEach(async () => {
  for (const gate of gates.splice(0)) await gate.service.stop(0);
  for (const server of servers.splice(0)) await server.close();
});

/** A gate with two issuers, each with its own JWKS server; no key set is loaded before a request. */
async function twoIssuerGate() {
  const first = await startJwksServer(['rsaA']);
  const second = await startJwksServer(['rsaA']);
  servers.push(first, second);
  const gate = buildService(
    {},
    {
      file: {
        issuers: [
          { issuer: ISSUER, audience: AUDIENCE, jwksUri: first.url },
          { issuer: OTHER, audience: AUDIENCE, jwksUri: second.url },
        ],
        policies: { default: { issuers: [ISSUER, OTHER] } },
      },
    },
  );
  gates.push(gate);
  const read = () => gate.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  const decide = (token: string, traceId?: string) =>
    gate.service.authorize({
      authorization: `Bearer ${token}`,
      ...(traceId === undefined ? {} : { traceparent: traceparent(traceId) }),
    });
  return { gate, first, second, read, decide };
}

/** The lines a message names, with the fields these tests look at. */
function linesOf(lines: Record<string, unknown>[], msg: string) {
  return lines
    .filter((line) => line.msg === msg)
    .map(({ issuer, trace_id }) => ({ issuer, trace_id }));
}

describe('the trace id on the lines of a real decision', () => {
  it('is on a line written after the decision waited for its key set (a JWKS fetch)', async () => {
    const { read, decide, first } = await twoIssuerGate();
    const waiting = decide(await mintToken(), A);
    expect(waiting).toBeInstanceOf(Promise);
    expect((await waiting).outcome).toBe('allow');
    expect(first.hits).toBe(1);
    // Written by the key set when the fetch came back, a wait after the request's own call.
    expect(linesOf(read(), 'key set loaded')).toEqual([{ issuer: ISSUER, trace_id: A }]);
  });

  it('is on a line written by a decision that does not wait, and on no line after it', async () => {
    const { gate, read, decide } = await twoIssuerGate();
    await gate.service.start();
    const token = await mintToken();
    expect((await decide(token)).outcome).toBe('allow');
    gate.lines.length = 0;
    // A cached token: decided within the call, no promise.
    const cached = decide(token, A);
    expect(cached).not.toBeInstanceOf(Promise);
    // An unknown policy: refused within the call, with a warning for the operator.
    const refused = gate.service.authorize({ policy: 'nope', traceparent: traceparent(B) });
    expect(refused).not.toBeInstanceOf(Promise);
    expect(gate.service.authorize({ policy: 'nope' })).not.toBeInstanceOf(Promise);
    const warnings = read().filter((line) => line.msg?.toString().startsWith('configuration'));
    expect(warnings.map((line) => line.trace_id)).toEqual([B, undefined]);
    // Its own decision log lines name their trace too.
    expect(read().map((line) => line.trace_id)).toEqual([A, B, B, undefined, undefined]);
  });

  it('keeps two decisions waiting at once, and one decided meanwhile, apart', async () => {
    const { read, decide } = await twoIssuerGate();
    const fromFirst = await mintToken();
    const fromSecond = await mintToken({ claims: { iss: OTHER } });
    // Both fetches are in flight together; a decision that does not wait is made in between.
    const waitingA = decide(fromFirst, A);
    const refused = decide('not-a-token', C);
    const waitingB = decide(fromSecond, B);
    expect(refused).not.toBeInstanceOf(Promise);
    const outcomes = await Promise.all([waitingA, waitingB]);
    expect(outcomes.map((decision) => decision.outcome)).toEqual(['allow', 'allow']);
    expect(linesOf(read(), 'key set loaded')).toEqual(
      expect.arrayContaining([
        { issuer: ISSUER, trace_id: A },
        { issuer: OTHER, trace_id: B },
      ]),
    );
    // No line of one request carries another's trace id: every line names its own issuer's.
    for (const line of read()) {
      if (line.issuer === ISSUER) expect(line.trace_id).toBe(A);
      if (line.issuer === OTHER) expect(line.trace_id).toBe(B);
    }
  });
});

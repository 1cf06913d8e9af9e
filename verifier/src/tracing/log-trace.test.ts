import { setImmediate as tick } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { allow } from '../decision/decision.js';
import type { Authorize } from '../decision/authorize.js';
import { captureLogger } from '../testing/fixtures.js';
import { withLogTrace } from './log-trace.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const TRACEPARENT = `00-${TRACE}-00f067aa0ba902b7-01`;
const identity = { sub: 'u', client: 'c', scopes: [], issuer: 'https://idp.test' };

/** An authorize that logs once before and once after waiting, as a fetch or a grant does. */
function loggingAuthorize() {
  const { logger, lines } = captureLogger();
  const authorize: Authorize = async () => {
    logger.warn({ step: 'before' }, 'before waiting');
    await tick();
    logger.child({ policy: 'p' }).warn('after waiting');
    return allow(identity);
  };
  const read = () => lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  return { authorize: withLogTrace(authorize), read, logger };
}

describe('the trace id on the log lines of a request', () => {
  it('is on a line of a decision made at once, which stays synchronous (a cached token)', () => {
    const { logger, lines } = captureLogger();
    const authorize = withLogTrace((_request: { traceparent?: string }) => {
      logger.warn('deciding');
      return allow(identity);
    });
    const decision = authorize({ traceparent: TRACEPARENT });
    expect(decision).not.toBeInstanceOf(Promise);
    expect(decision.outcome).toBe('allow');
    logger.warn('after the request');
    const ids = lines.map((line) => (JSON.parse(line) as Record<string, unknown>).trace_id);
    expect(ids).toEqual([TRACE, undefined]);
  });

  it('is on every line written while deciding a request with a valid traceparent', async () => {
    const { authorize, read } = loggingAuthorize();
    expect((await authorize({ traceparent: TRACEPARENT })).outcome).toBe('allow');
    expect(read().map((line) => line.trace_id)).toEqual([TRACE, TRACE]);
    // A line's own fields stay on that line.
    expect(read().map((line) => line.step)).toEqual(['before', undefined]);
  });

  it('is absent without a traceparent, with a malformed one, and outside any request', async () => {
    const { authorize, read, logger } = loggingAuthorize();
    await authorize({});
    await authorize({ traceparent: `00-${TRACE.toUpperCase()}-00f067aa0ba902b7-01` });
    logger.info({ step: 'between' }, 'between requests');
    expect(read()).toHaveLength(5);
    for (const line of read()) expect(line).not.toHaveProperty('trace_id');
  });

  it('keeps concurrent requests apart', async () => {
    const { authorize, read } = loggingAuthorize();
    const other = '0af7651916cd43dd8448eb211c80319c';
    await Promise.all([
      authorize({ traceparent: TRACEPARENT }),
      authorize({ traceparent: `00-${other}-b7ad6b7169203331-01` }),
      authorize({}),
    ]);
    const ids = read().map((line) => line.trace_id);
    expect(ids.filter((id) => id === TRACE)).toHaveLength(2);
    expect(ids.filter((id) => id === other)).toHaveLength(2);
    expect(ids.filter((id) => id === undefined)).toHaveLength(2);
  });
});

import { setImmediate as tick } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { allow } from '../decision/decision.js';
import type { Authorize } from '../decision/authorize.js';
import { captureLogger } from '../testing/fixtures.js';
import { carryLogTrace, withLogTrace } from './log-trace.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const TRACEPARENT = `00-${TRACE}-00f067aa0ba902b7-01`;
const identity = { sub: 'u', client: 'c', scopes: [], issuer: 'https://idp.test' };

/**
 * An authorize that logs once before and once after waiting, as a fetch or a grant does, entering
 * its wait as authorize.ts does (carryLogTrace where it first goes asynchronous).
 */
function loggingAuthorize() {
  const { logger, lines } = captureLogger();
  const wait = async () => {
    await tick();
    logger.child({ policy: 'p' }).warn('after waiting');
    return allow(identity);
  };
  const authorize: Authorize = () => {
    logger.warn({ step: 'before' }, 'before waiting');
    return carryLogTrace(wait);
  };
  const read = () => lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  return { authorize: withLogTrace(authorize), read, logger };
}

/** A promise the test settles by hand, to order two requests' steps exactly. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open = () => undefined as void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
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

  it('never lends one waiting request its trace id to another, whatever order they resume in', async () => {
    const { logger, lines } = captureLogger();
    const other = '0af7651916cd43dd8448eb211c80319c';
    const gates = new Map([
      [TRACE, gate()],
      [other, gate()],
    ]);
    // Each request logs, waits for its own gate twice, logging after each wait.
    const authorize = withLogTrace((request: { traceparent: string; name: string }) => {
      logger.warn({ name: request.name }, 'start');
      const own = gates.get(request.traceparent.slice(3, 35))!;
      return carryLogTrace(async () => {
        await own.opened;
        logger.warn({ name: request.name }, 'resumed');
        await tick();
        logger.warn({ name: request.name }, 'resumed again');
        return allow(identity);
      });
    });
    const first = authorize({ traceparent: TRACEPARENT, name: 'first' });
    const second = authorize({ traceparent: `00-${other}-b7ad6b7169203331-01`, name: 'second' });
    // The second resumes first; a request decided at once runs while both wait.
    gates.get(other)!.open();
    await tick();
    const atOnce = withLogTrace((_request: { traceparent: string }) => {
      logger.warn({ name: 'at once' }, 'start');
      return allow(identity);
    });
    atOnce({ traceparent: `00-${'c'.repeat(32)}-b7ad6b7169203331-01` });
    gates.get(TRACE)!.open();
    await Promise.all([first, second]);
    const seen = lines.map((line) => JSON.parse(line) as { name: string; trace_id?: string });
    expect(seen.map(({ name, trace_id }) => `${name} ${trace_id}`).sort()).toEqual(
      [
        ...Array<string>(3).fill(`first ${TRACE}`),
        ...Array<string>(3).fill(`second ${other}`),
        `at once ${'c'.repeat(32)}`,
      ].sort(),
    );
    // The steps really interleaved: the second resumed, then one was decided at once, then the first.
    expect(seen.map((line) => line.name).slice(0, 4)).toEqual([
      'first',
      'second',
      'second',
      'at once',
    ]);
  });

  it('is on no line after a wait the decision did not enter through carryLogTrace', async () => {
    const { logger, lines } = captureLogger();
    const authorize = withLogTrace(async (_request: { traceparent: string }) => {
      await tick();
      logger.warn('after an uncarried wait');
      return allow(identity);
    });
    const waiting = authorize({ traceparent: TRACEPARENT });
    // Decided while the other waits: its trace must not leak into the other's later line.
    withLogTrace((_request: { traceparent: string }) => allow(identity))({
      traceparent: `00-${'d'.repeat(32)}-b7ad6b7169203331-01`,
    });
    await waiting;
    expect(lines.map((line) => (JSON.parse(line) as Record<string, unknown>).trace_id)).toEqual([
      undefined,
    ]);
  });
});

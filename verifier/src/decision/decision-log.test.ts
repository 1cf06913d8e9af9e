import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { createLogThrottle } from '../revocation/log-throttle.js';
import { captureLogger } from '../testing/fixtures.js';
import { allow, deny } from './decision.js';
import { createDecisionLog, type DecisionLogOptions } from './decision-log.js';
import { decisionLogJsonSchema } from './decision-log-schema.js';

const SCHEMA_FILE = new URL('../../../docs/decision-log.schema.json', import.meta.url);
const TOKEN = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXZhbHVl';
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';
const alice = { sub: 'alice', client: 'spa-demo', scopes: ['secrets:read'], issuer: 'https://idp' };
const request = {
  originalUri: '/secret',
  originalMethod: 'GET',
  traceparent: `00-${TRACE}-${SPAN}-01`,
};

function logWith(options: Partial<DecisionLogOptions> = {}) {
  let time = 1_000;
  const { logger, lines } = captureLogger();
  const now = () => time;
  const log = createDecisionLog({ logger, now, throttle: createLogThrottle(now, 1), ...options });
  const entries = () => lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  return { log, lines, entries, tick: (seconds: number) => (time += seconds) };
}

describe('the decision log', () => {
  it('writes an allow at info with policy, set, client, issuer, hashed subject and trace id', () => {
    const { log, entries } = logWith({ setName: () => 'c0123' });
    log(request, 'secret', TOKEN, { decision: allow(alice), detail: undefined });
    expect(entries()).toEqual([
      expect.objectContaining({
        level: 30,
        msg: 'allowed',
        decision_log: 1,
        outcome: 'allow',
        status: 204,
        reason: 'allowed',
        policy: 'secret',
        set: 'c0123',
        client: 'spa-demo',
        issuer: 'https://idp',
        subject_hash: expect.stringMatching(/^[0-9a-f]{32}$/),
        trace_id: TRACE,
        parent_span_id: SPAN,
        uri: '/secret',
      }),
    ]);
    expect(entries()[0]).not.toHaveProperty('subject');
  });

  it('keys the subject hash: the same key gives the same hash, another key another', () => {
    const hashWith = (subjectKey: string) => {
      const { log, entries } = logWith({ subjectKey });
      log(request, 'secret', TOKEN, { decision: allow(alice), detail: undefined });
      return entries()[0]?.subject_hash;
    };
    const key = 'k'.repeat(32);
    expect(hashWith(key)).toBe(hashWith(key));
    expect(hashWith(key)).not.toBe(hashWith('j'.repeat(32)));
  });

  it('names the subject itself only when the operator opts in', () => {
    const { log, entries } = logWith({ subject: 'plain' });
    log(request, 'secret', TOKEN, { decision: allow(alice), detail: undefined });
    expect(entries()[0]).toMatchObject({ subject: 'alice' });
  });

  it('writes a refusal with its status, reason and detail, and no trace id for a malformed traceparent', () => {
    const { log, entries } = logWith();
    const decision = deny('scope_insufficient', alice, ['secrets:read']);
    log({ ...request, traceparent: `00-${TRACE.toUpperCase()}-${SPAN}-01` }, 'payments', TOKEN, {
      decision,
      detail: 'missing scope',
    });
    expect(entries()[0]).toMatchObject({
      msg: 'denied',
      outcome: 'deny',
      status: 403,
      reason: 'scope_insufficient',
      policy: 'payments',
      client: 'spa-demo',
      detail: 'missing scope',
    });
    expect(entries()[0]).not.toHaveProperty('trace_id');
    expect(entries()[0]).not.toHaveProperty('set');
  });

  it('past 100 refusals without a verified token in a second, writes one a second per reason and says how many it left out', () => {
    const { log, entries, tick } = logWith();
    for (let i = 0; i < 200; i++)
      log(request, 'secret', `garbage-${i}`, {
        decision: deny('token_malformed'),
        detail: 'not a JWT',
      });
    log(request, 'secret', TOKEN, { decision: allow(alice), detail: undefined });
    tick(1);
    log(request, 'secret', 'garbage', { decision: deny('token_malformed'), detail: 'not a JWT' });
    const written = entries().map((entry) => [entry.reason, entry.suppressed]);
    expect(written).toHaveLength(103);
    expect(written.slice(100)).toEqual([
      ['token_malformed', undefined],
      ['allowed', undefined],
      ['token_malformed', 99],
    ]);
  });

  it('never writes the token, only its fingerprint', () => {
    const { log, lines } = logWith();
    log(request, 'secret', TOKEN, { decision: allow(alice), detail: undefined });
    log(request, 'secret', TOKEN, { decision: deny('token_expired'), detail: 'expired' });
    for (const part of TOKEN.split('.')) expect(lines.join('\n')).not.toContain(part);
  });
});

describe('the decision log schema (docs/decision-log.schema.json)', () => {
  const committed = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')) as object;

  it('is the one generated from decision-log-schema.ts', () => {
    expect(committed).toEqual(decisionLogJsonSchema());
  });

  it('validates every kind of line the log writes, and refuses one with a token-shaped subject hash', () => {
    const validate = new Ajv2020({ strict: false }).compile(committed);
    const { log, entries, tick } = logWith({ subject: 'plain', setName: () => 'c0123' });
    log(request, 'secret', TOKEN, { decision: allow(alice), detail: undefined });
    log({}, 'default', undefined, { decision: deny('token_missing'), detail: undefined });
    log(request, 'secret', TOKEN, { decision: deny('client_not_allowed', alice), detail: 'x' });
    log(request, 'secret', 'x', { decision: deny('token_missing'), detail: undefined });
    tick(2);
    log(request, 'secret', 'x', { decision: deny('token_missing'), detail: undefined });
    expect(entries()).toHaveLength(5);
    for (const entry of entries())
      expect(validate(entry), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ ...entries()[0], subject_hash: TOKEN })).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';
import { allow, withHeaders, type Decision } from '../decision/decision.js';
import type { Identity } from '../token/identity.js';
import { renderDecision, secretSetName } from './verify-answer.js';

const ISSUER = 'https://issuer.test';
const who = (client: string, sub = 'user-1'): Identity => ({
  sub,
  client,
  scopes: ['secrets:read'],
  issuer: ISSUER,
});
const allowed = (identity: Identity, edgeTtl?: number): Decision =>
  edgeTtl === undefined ? allow(identity) : { ...allow(identity), edgeTtl };

// An allow's answer is shared between requests of one client (no allocation per cached request):
// sharing must never hand one caller another's set or a stale edge lifetime.
describe('the allow answer', () => {
  it('names the caller’s own client and set, whoever asked before', () => {
    const a = renderDecision(allowed(who('client-a'), 5));
    const b = renderDecision(allowed(who('client-b'), 5));
    expect(a.headers).toEqual([
      ['X-Accel-Expires', '5'],
      ['X-Auth-Client', 'client-a'],
      ['X-Auth-Set', secretSetName(ISSUER, 'client-a')],
    ]);
    expect(b.headers[2]).toEqual(['X-Auth-Set', secretSetName(ISSUER, 'client-b')]);
    expect(renderDecision(allowed(who('client-a', 'user-2'), 5))).toEqual(a);
  });

  it('carries the edge lifetime of this decision, not the last one of the client', () => {
    const client = 'client-ttl';
    expect(renderDecision(allowed(who(client), 7)).headers[0]).toEqual(['X-Accel-Expires', '7']);
    expect(renderDecision(allowed(who(client))).headers[0]).toEqual(['X-Accel-Expires', '0']);
    expect(renderDecision(allowed(who(client), 3)).headers[0]).toEqual(['X-Accel-Expires', '3']);
    expect(renderDecision(allowed(who(client), 900)).headers[0]).toEqual([
      'X-Accel-Expires',
      '900',
    ]);
    expect(renderDecision(allowed(who(''), 4))).toEqual({
      status: 204,
      headers: [['X-Accel-Expires', '4']],
    });
  });

  it('keeps a plugin’s headers to the decision that carries them', () => {
    const client = 'client-plugin';
    const plain = renderDecision(allowed(who(client), 5));
    const cookie = ['Set-Cookie', 'CloudFront-Policy=abc'] as const;
    const signed = renderDecision(withHeaders(allowed(who(client), 5), [cookie]));
    expect(signed.headers).toEqual([...plain.headers, cookie]);
    expect(renderDecision(allowed(who(client), 5)).headers).not.toContainEqual(cookie);
  });
});

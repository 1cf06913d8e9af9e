// What a reload may change in a running verifier: policies and issuers; everything a start builds
// once refuses the whole change, each setting named.
import { describe, expect, it } from 'vitest';
import { loadConfig } from './load.js';
import { needsRestart } from './reload-plan.js';

const ISSUER = 'https://idp.test';
const base = {
  issuers: [{ issuer: ISSUER, audience: 'api', jwksUri: `${ISSUER}/jwks` }],
  policies: { secret: { issuers: [ISSUER], scopes: ['secrets:read'] } },
};
const load = (document: unknown) =>
  loadConfig({ VERIFIER_CONFIG: '/c.json' }, () => JSON.stringify(document));
const BUILT = { dpop: false, revocation: false };

describe('needsRestart', () => {
  it.each([
    ['a policy field', { ...base, policies: { secret: { issuers: [ISSUER], clients: ['a'] } } }],
    [
      'a policy added',
      { ...base, policies: { ...base.policies, payments: { issuers: [ISSUER] } } },
    ],
    ['an issuer setting', { ...base, issuers: [{ ...base.issuers[0], audience: 'other' }] }],
  ])('lets %s change', (_, next) => {
    expect(needsRestart(load(base), load(next), BUILT)).toEqual([]);
  });

  it('names every top-level setting that changed', () => {
    const next = { ...base, logLevel: 'debug', callLimit: { rate: '10r/s' } };
    expect(needsRestart(load(base), load(next), BUILT)).toEqual([
      'callLimit: changed; read at start only; restart to apply',
      'logLevel: changed; read at start only; restart to apply',
    ]);
  });

  it('refuses DPoP on a policy when no DPoP step was built at start, not when one was', () => {
    const next = { ...base, policies: { secret: { issuers: [ISSUER], dpop: 'allowed' } } };
    expect(needsRestart(load(base), load(next), BUILT)).toEqual([
      'policies.secret.dpop: no policy read DPoP at start, so no DPoP replay store runs; restart to apply',
    ]);
    expect(needsRestart(load(base), load(next), { ...BUILT, dpop: true })).toEqual([]);
  });

  it('refuses an issuer change while revocation receivers run', () => {
    const next = { ...base, issuers: [{ ...base.issuers[0], audience: 'other' }] };
    expect(needsRestart(load(base), load(next), { ...BUILT, revocation: true })).toEqual([
      'issuers: changed while revocation receivers run (they read the issuers at start); restart to apply',
    ]);
    expect(needsRestart(load(base), load(base), { ...BUILT, revocation: true })).toEqual([]);
  });
});

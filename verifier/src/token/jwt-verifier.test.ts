// What the JWT verifier reports when the failure is not the token's: a bug below it is rethrown
// (the decision answers it as internal_error), never dressed up as a bad signature. The accept /
// refuse matrix against jose's own jwtVerify is in ../jwt-verifier.reference.test.ts.
import { systemClock } from '../clock.js';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config/load.js';
import type { JwtIssuer } from '../config/model.js';
import { VerifyError } from '../errors.js';
import { AUDIENCE, ISSUER, mintToken } from '../testing/fixtures.js';
import { createJwtVerifier } from './jwt-verifier.js';
import type { KeySet } from './key-set.js';

const issuer = loadConfig({ VERIFIER_ISSUER: ISSUER, VERIFIER_AUDIENCE: AUDIENCE }).issuers.get(
  ISSUER,
) as JwtIssuer;

function keySetFailingWith(error: Error): KeySet {
  return {
    issuer: ISSUER,
    start: async () => {},
    isReady: () => true,
    trustedUntilSeconds: () => Infinity,
    getKey: () => Promise.reject(error),
    refresh: async () => false,
    stop: () => {},
  };
}

describe('the JWT verifier', () => {
  it('rethrows a failure that is not a token outcome instead of calling it signature_invalid', async () => {
    const bug = new RangeError('a bug in the key set');
    const verify = createJwtVerifier(issuer, keySetFailingWith(bug), systemClock);
    await expect(verify(await mintToken())).rejects.toBe(bug);
  });

  it("passes the key set's own outcome on unchanged", async () => {
    const unavailable = new VerifyError('keys_unavailable', 'keys are not available');
    const verify = createJwtVerifier(issuer, keySetFailingWith(unavailable), systemClock);
    await expect(verify(await mintToken())).rejects.toMatchObject({ code: 'keys_unavailable' });
  });
});

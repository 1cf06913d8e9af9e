import { describe, expect, it } from 'vitest';
import { savePendingSignIn, takePendingSignIn } from './pending-sign-in.js';

/** sessionStorage's contract, backed by a Map. */
function memoryStorage(): Storage {
  const items = new Map<string, string>();
  return {
    get length() {
      return items.size;
    },
    clear: () => items.clear(),
    getItem: (key) => items.get(key) ?? null,
    key: (index) => [...items.keys()][index] ?? null,
    removeItem: (key) => void items.delete(key),
    setItem: (key, value) => void items.set(key, value),
  };
}

const pending = { state: 's', nonce: 'n', codeVerifier: 'v', startedAt: 1_000_000 };

describe('pending sign-in', () => {
  it('is returned once and then gone, so a code cannot be redeemed twice from this tab', () => {
    const storage = memoryStorage();
    savePendingSignIn(storage, pending);
    expect(takePendingSignIn(storage, 1_000_500)).toEqual(pending);
    expect(takePendingSignIn(storage, 1_000_600)).toBeUndefined();
    expect(storage.length).toBe(0);
  });

  it('is abandoned after ten minutes', () => {
    const storage = memoryStorage();
    savePendingSignIn(storage, pending);
    expect(takePendingSignIn(storage, 1_000_000 + 10 * 60 * 1000 + 1)).toBeUndefined();
  });

  it('is ignored and removed when unreadable', () => {
    const storage = memoryStorage();
    storage.setItem('secret-gate.pending-sign-in', '{not json');
    expect(takePendingSignIn(storage, 1_000_000)).toBeUndefined();
    storage.setItem('secret-gate.pending-sign-in', JSON.stringify({ state: 1 }));
    expect(takePendingSignIn(storage, 1_000_000)).toBeUndefined();
    expect(storage.length).toBe(0);
  });

  it('carries a step-up (set, acr_values, max_age) through the redirect', () => {
    const storage = memoryStorage();
    const stepUp = {
      reason: 'insufficient_user_authentication' as const,
      set: 'payments',
      acrValues: ['urn:secret-gate:mfa'],
      maxAge: 300,
    };
    savePendingSignIn(storage, { ...pending, stepUp });
    expect(takePendingSignIn(storage, 1_000_500)).toEqual({ ...pending, stepUp });
  });

  it('carries a scope step-up (set, scopes) through the redirect', () => {
    const storage = memoryStorage();
    const stepUp = { reason: 'insufficient_scope' as const, set: 'payments', scopes: ['payments'] };
    savePendingSignIn(storage, { ...pending, stepUp });
    expect(takePendingSignIn(storage, 1_000_500)).toEqual({ ...pending, stepUp });
  });

  const UA = 'insufficient_user_authentication';
  it.each([
    [{ reason: UA, set: 7 }],
    [{ reason: UA, acrValues: 'urn:x' }],
    [{ reason: UA, maxAge: -1 }],
    [{ reason: 'insufficient_scope', scopes: 'payments' }],
    [{ reason: 'other', set: 'payments' }],
    [{ set: 'payments' }],
    ['payments'],
  ])('drops a sign-in whose step-up %j this app did not write', (stepUp) => {
    const storage = memoryStorage();
    storage.setItem('secret-gate.pending-sign-in', JSON.stringify({ ...pending, stepUp }));
    expect(takePendingSignIn(storage, 1_000_500)).toBeUndefined();
  });
});

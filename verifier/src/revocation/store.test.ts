// The in-process revocation store and the per-request check as specifications: the higher
// watermark wins, a watermark lives until no token it matches can still be valid, a token without
// `iat` cannot be shown newer, and a full store refuses rather than forgets.
import { describe, expect, it } from 'vitest';
import { manualClock } from '../testing/fixtures.js';
import { createRevocationStore } from './store.js';
import { createRevocationApplier, createRevocationCheck, watermarkKey } from './watermarks.js';

const ISS = 'https://idp.test';

function setup(maxEntries = 100) {
  const clock = manualClock();
  const store = createRevocationStore({
    url: undefined,
    viewMaxEntries: maxEntries,
    replayMaxEntries: maxEntries,
    now: clock.now,
  });
  // Tokens of ISS live at most 300 s (maxTokenAge + clockTolerance).
  const apply = createRevocationApplier(store, new Map([[ISS, 300]]), clock.now);
  let unchecked = 0;
  const check = createRevocationCheck(store, () => void unchecked++);
  const decision = (
    sub: string,
    iat: number | undefined,
    extra: { sid?: string; email?: string } = {},
  ) => ({
    identity: { sub, client: 'spa-demo', scopes: [], issuer: ISS },
    session: { iat, sid: extra.sid, email: extra.email },
  });
  return { clock, store, apply, check, decision, unchecked: () => unchecked };
}

describe('revocation watermarks', () => {
  it('refuse tokens issued before the watermark, not at or after it', async () => {
    const { clock, apply, check, decision } = setup();
    const t = clock.seconds();
    await apply([{ kind: 'sub', iss: ISS, value: 'ann', at: t }]);
    expect(check(decision('ann', t - 1), 'checked')).toBe('revoked');
    expect(check(decision('ann', t), 'checked')).toBe('valid');
    expect(check(decision('bob', t - 1), 'checked')).toBe('valid');
  });

  it('keep the higher of two watermarks', async () => {
    const { clock, apply, check, decision } = setup();
    const t = clock.seconds();
    await apply([{ kind: 'sub', iss: ISS, value: 'ann', at: t }]);
    await apply([{ kind: 'sub', iss: ISS, value: 'ann', at: t - 100 }]);
    expect(check(decision('ann', t - 50), 'checked')).toBe('revoked');
  });

  it('expire once no token they match can still be valid (watermark + longest lifetime)', async () => {
    const { clock, store, apply, check, decision } = setup();
    const t = clock.seconds();
    await apply([{ kind: 'sub', iss: ISS, value: 'ann', at: t }]);
    clock.advance(299);
    expect(check(decision('ann', t - 1), 'checked')).toBe('revoked');
    clock.advance(2);
    expect(store.revokedBefore(watermarkKey('sub', ISS, 'ann'))).toBeUndefined();
  });

  it('are not written for issuers the gate accepts no tokens from, nor when already moot', async () => {
    const { clock, store, apply } = setup();
    expect(
      await apply([
        { kind: 'sub', iss: 'https://elsewhere.test', value: 'x', at: clock.seconds() },
      ]),
    ).toBe(0);
    expect(await apply([{ kind: 'sub', iss: ISS, value: 'x', at: clock.seconds() - 400 }])).toBe(0);
    expect(store.size).toBe(0);
  });

  it("match a session id and a verified e-mail address (case-insensitively), of that issuer's tokens only", async () => {
    const { clock, apply, check, decision } = setup();
    const t = clock.seconds();
    await apply([
      { kind: 'sid', iss: ISS, value: 's-1', at: t },
      { kind: 'email', iss: ISS, value: 'Cy@Example.com', at: t },
    ]);
    expect(check(decision('u', t - 1, { sid: 's-1' }), 'checked')).toBe('revoked');
    expect(check(decision('u', t - 1, { sid: 's-2' }), 'checked')).toBe('valid');
    expect(check(decision('v', t - 1, { email: 'cy@example.com' }), 'checked')).toBe('revoked');
    const elsewhere = decision('v', t - 1, { email: 'cy@example.com' });
    const other = {
      ...elsewhere,
      identity: { ...elsewhere.identity, issuer: 'https://other.test' },
    };
    expect(check(other, 'checked')).toBe('valid');
  });

  it('refuse a token without iat once its subject has a watermark', async () => {
    const { clock, apply, check, decision } = setup();
    await apply([{ kind: 'sub', iss: ISS, value: 'ann', at: clock.seconds() }]);
    expect(check(decision('ann', undefined), 'checked')).toBe('revoked');
  });

  it('refuse new watermarks when full of live ones, never forgetting one', async () => {
    const { clock, apply, check, decision } = setup(2);
    const t = clock.seconds();
    await apply([{ kind: 'sub', iss: ISS, value: 'a', at: t }]);
    await apply([{ kind: 'sub', iss: ISS, value: 'b', at: t }]);
    await expect(apply([{ kind: 'sub', iss: ISS, value: 'c', at: t }])).rejects.toThrow(/full/);
    expect(check(decision('a', t - 1), 'checked')).toBe('revoked');
  });

  it('fail closed while a refused revocation is neither recorded nor expired', async () => {
    const { clock, store, apply, check, decision, unchecked } = setup(1);
    const t = clock.seconds();
    await apply([{ kind: 'sub', iss: ISS, value: 'a', at: t }]);
    clock.advance(100);
    // c's logout is refused: c's token is not refused by the view, so nothing is served under
    // `required`, and `checked` serves it counted as unchecked.
    await expect(
      apply([{ kind: 'sub', iss: ISS, value: 'c', at: clock.seconds() }]),
    ).rejects.toThrow(/full/);
    expect(store.isCurrent()).toBe(false);
    expect(check(decision('c', t), 'required')).toBe('unavailable');
    expect(check(decision('bob', t), 'required')).toBe('unavailable');
    expect(check(decision('c', t), 'checked')).toBe('valid');
    expect(unchecked()).toBe(1);
    // a's watermark expires (300 s after t): c's retry is recorded, and the view is current again.
    clock.advance(201);
    await apply([{ kind: 'sub', iss: ISS, value: 'c', at: clock.seconds() }]);
    expect(store.isCurrent()).toBe(true);
    expect(check(decision('c', t), 'required')).toBe('revoked');
    expect(check(decision('bob', t), 'required')).toBe('valid');
  });

  it('fail closed after an unretried refusal until every token it could match has expired', async () => {
    const { clock, store, apply } = setup(1);
    await apply([{ kind: 'sub', iss: ISS, value: 'a', at: clock.seconds() }]);
    await expect(
      apply([{ kind: 'sub', iss: ISS, value: 'c', at: clock.seconds() }]),
    ).rejects.toThrow(/full/);
    clock.advance(299);
    expect(store.isCurrent()).toBe(false);
    clock.advance(2);
    expect(store.isCurrent()).toBe(true);
  });
});

describe('the jti set', () => {
  it('answers true once, false for a replay, and forgets on request', async () => {
    const { store } = setup();
    expect(await store.remember('bcl\nx', 240)).toBe(true);
    expect(await store.remember('bcl\nx', 240)).toBe(false);
    await store.forget('bcl\nx');
    expect(await store.remember('bcl\nx', 240)).toBe(true);
  });

  it('remembers each key for the lifetime it is given', async () => {
    const { clock, store } = setup();
    expect(await store.remember('set\nlong', 3600)).toBe(true);
    expect(await store.remember('bcl\nshort', 240)).toBe(true);
    clock.advance(241);
    expect(await store.remember('bcl\nshort', 240)).toBe(true);
    clock.advance(3000);
    expect(await store.remember('set\nlong', 3600)).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';
import { readSetBody } from './secret-set.js';

describe('readSetBody', () => {
  it('keeps expires_at out of the values', () => {
    expect(readSetBody({ k: 'v', m: 'minted', expires_at: { m: 1_900_000_000 } })).toEqual({
      values: { k: 'v', m: 'minted' },
      expiresAt: { m: 1_900_000_000 },
    });
  });

  it('reads numbers as text, as older sets hold them', () => {
    expect(readSetBody({ port: 8443 })?.values).toEqual({ port: '8443' });
  });

  it.each([
    ['null', null],
    ['an array', [{ k: 'v' }]],
    ['a nested value', { k: { nested: true } }],
    ['expires_at not an object', { k: 'v', expires_at: 5 }],
    ['an expiry that is not a number', { k: 'v', expires_at: { k: '1900000000' } }],
    ['a negative expiry', { k: 'v', expires_at: { k: -1 } }],
    ['an expiry for a value the body lacks', { k: 'v', expires_at: { other: 1_900_000_000 } }],
  ])('refuses %s', (_case, body) => {
    expect(readSetBody(body)).toBe(undefined);
  });

  it('keeps a value named __proto__ as a value, not as the prototype', () => {
    const body = JSON.parse('{"__proto__":"x","k":"v"}') as unknown;
    const values = readSetBody(body)?.values ?? {};
    expect(Object.entries(values)).toEqual([
      ['__proto__', 'x'],
      ['k', 'v'],
    ]);
    expect(Object.getPrototypeOf(values)).toBe(Object.prototype);
  });
});

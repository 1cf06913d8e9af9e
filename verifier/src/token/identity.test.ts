import { describe, expect, it } from 'vitest';
import { readIdentity } from './identity.js';

const issuer = { issuer: 'https://idp.test', clientClaims: ['azp'] };
const read = (claims: Record<string, unknown>) => readIdentity({ azp: 'spa', ...claims }, issuer);

describe('the scopes of an identity', () => {
  it('are the words of the `scope` string, empty words (doubled or edge spaces) dropped', () => {
    expect(read({ scope: ' openid  secrets:read ' }).scopes).toEqual(['openid', 'secrets:read']);
    expect(read({ scope: '' }).scopes).toEqual([]);
  });

  it('are one shared, frozen list for tokens with the same `scope` string', () => {
    const first = read({ scope: `openid secrets:read ${'x'.repeat(3)}` }).scopes;
    const second = read({ scope: `openid secrets:read ${'x'.repeat(3)}` }).scopes;
    expect(second).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(() => (first as string[]).push('admin')).toThrow(TypeError);
  });

  it('of a very long `scope` string are split anew each time and still read the same', () => {
    const long = Array.from({ length: 200 }, (_, i) => `scope:${i}`).join(' ');
    const first = read({ scope: long }).scopes;
    expect(first).toHaveLength(200);
    expect(read({ scope: long }).scopes).toEqual(first);
  });

  it('come from `scp` only when `scope` is absent, and a `scope` array grants nothing', () => {
    expect(read({ scp: ['a', '', 7, 'b'] }).scopes).toEqual(['a', 'b']);
    expect(read({ scope: ['admin'] }).scopes).toEqual([]);
  });
});

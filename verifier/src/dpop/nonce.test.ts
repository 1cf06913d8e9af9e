import { describe, expect, it } from 'vitest';
import { createNonceSource } from './nonce.js';

const KEY = 'k'.repeat(32);

describe('stateless DPoP nonces', () => {
  it('is the same on every replica that shares the key, and differs under another key', () => {
    const now = () => 1_700_000_000;
    const a = createNonceSource(KEY, 60, now);
    const b = createNonceSource(KEY, 60, now);
    const other = createNonceSource('x'.repeat(32), 60, now);
    expect(a.current()).toBe(b.current());
    expect(b.isValid(a.current())).toBe(true);
    expect(other.isValid(a.current())).toBe(false);
  });

  it('accepts the current and the previous window only', () => {
    let at = 1_700_000_000;
    const nonces = createNonceSource(KEY, 60, () => at);
    const issued = nonces.current();
    at += 60;
    expect(nonces.isValid(issued)).toBe(true);
    at += 60;
    expect(nonces.isValid(issued)).toBe(false);
  });

  it.each([undefined, 42, '', 'abc', 'zz.AAAA', `${'a'.repeat(70)}`])('refuses %s', (nonce) => {
    const nonces = createNonceSource(KEY, 60, () => 1e9);
    expect(nonces.isValid(nonce)).toBe(false);
  });

  it('refuses a nonce whose window was edited', () => {
    const nonces = createNonceSource(KEY, 60, () => 1e9);
    const [window, mac] = nonces.current().split('.') as [string, string];
    const previous = (Number.parseInt(window, 36) - 1).toString(36);
    expect(nonces.isValid(`${previous}.${mac}`)).toBe(false);
  });
});

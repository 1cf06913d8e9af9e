import { describe, expect, it } from 'vitest';
import { displayValue, MASK, parseSecretSet } from './secret-set.js';

describe('parseSecretSet', () => {
  it('reads a flat object and marks key-like names as sensitive', () => {
    expect(
      parseSecretSet({ 'x-api-key': 'k-123', 'api-base': 'https://api.example.com', retries: 3 }),
    ).toEqual([
      { name: 'x-api-key', value: 'k-123', sensitive: true },
      { name: 'api-base', value: 'https://api.example.com', sensitive: false },
      { name: 'retries', value: '3', sensitive: false },
    ]);
  });

  it.each(['client-secret', 'SESSION_TOKEN', 'db-password', 'cf-signature', 'private-pem'])(
    'treats %s as sensitive',
    (name) => {
      expect(parseSecretSet({ [name]: 'v' })?.[0]?.sensitive).toBe(true);
    },
  );

  it.each([[null], [[]], ['text'], [{ nested: { a: 1 } }], [{ flag: true }]])(
    'rejects %j',
    (body) => {
      expect(parseSecretSet(body)).toBeUndefined();
    },
  );
});

describe('displayValue', () => {
  const apiKey = { name: 'x-api-key', value: 'k-1234567890abcdef-long', sensitive: true };

  it('masks a sensitive value with a fixed-width mask that reveals neither content nor length', () => {
    expect(displayValue(apiKey, false)).toBe(MASK);
    expect(displayValue({ ...apiKey, value: 'k' }, false)).toBe(MASK);
  });

  it('shows the value once revealed', () => {
    expect(displayValue(apiKey, true)).toBe('k-1234567890abcdef-long');
  });

  it('never masks plain settings', () => {
    expect(displayValue({ name: 'api-base', value: 'https://x', sensitive: false }, false)).toBe(
      'https://x',
    );
  });
});

import { describe, expect, it } from 'vitest';
import type { SecretSet } from '@secret-gate/client';
import { displayValue, entriesOf, MASK } from './secret-set.js';

function set(values: Record<string, string>, expiresAt = {}, gateClockOffset = 0): SecretSet {
  return { name: undefined, values, expiresAt, gateClockOffset };
}

describe('entriesOf', () => {
  it('lists the values in order and marks key-like names as sensitive', () => {
    expect(entriesOf(set({ 'x-api-key': 'k-123', 'api-base': 'https://api.example.com' }))).toEqual(
      [
        { name: 'x-api-key', value: 'k-123', sensitive: true },
        { name: 'api-base', value: 'https://api.example.com', sensitive: false },
      ],
    );
  });

  it.each(['client-secret', 'SESSION_TOKEN', 'db-password', 'cf-signature', 'private-pem'])(
    'treats %s as sensitive',
    (name) => {
      expect(entriesOf(set({ [name]: 'v' }))[0]?.sensitive).toBe(true);
    },
  );

  it('treats every minted value as sensitive, whatever its name', () => {
    const [upload] = entriesOf(
      set({ 'avatar-upload-url': 'https://s3/…' }, { 'avatar-upload-url': 9 }),
    );
    expect(upload?.sensitive).toBe(true);
  });

  it("gives a minted value its expiry on the page's clock", () => {
    // The gate's clock is 30 s ahead of the page: its expiry is 30 s earlier here.
    const entries = entriesOf(set({ 'algolia-key': 'a', k: 'v' }, { 'algolia-key': 2_000 }, 30));
    expect(entries[0]?.expiresAt).toEqual(new Date(1_970_000));
    expect(entries[1]).not.toHaveProperty('expiresAt');
  });
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

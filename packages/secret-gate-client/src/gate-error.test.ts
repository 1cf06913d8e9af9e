import { describe, expect, it } from 'vitest';
import { parseRetryAfter } from './gate-error.js';

const NOW_MS = Date.parse('2025-06-01T12:00:00Z');

describe('parseRetryAfter', () => {
  it.each([
    ['120', 120],
    [' 7 ', 7],
    ['0', 0],
    ['Sun, 01 Jun 2025 12:00:30 GMT', 30],
    ['Sun, 01 Jun 2025 11:00:00 GMT', 0],
  ])('reads %j as %i seconds', (value, seconds) => {
    expect(parseRetryAfter(value, NOW_MS)).toBe(seconds);
  });

  it.each([[null], [''], ['-5'], ['1.5'], ['soon'], ['2025-06-01T12:00:30Z']])(
    'ignores %j',
    (value) => {
      expect(parseRetryAfter(value, NOW_MS)).toBeUndefined();
    },
  );
});

import { describe, expect, it } from 'vitest';
import { externalUrl, normalizeHtu } from './htu.js';

describe('normalizeHtu', () => {
  it.each([
    ['https://Gate.Example.com/secret', 'https://gate.example.com/secret'],
    ['https://gate.example.com:443/secret', 'https://gate.example.com/secret'],
    ['http://127.0.0.1:8080/secret?x=1#frag', 'http://127.0.0.1:8080/secret'],
    ['HTTPS://gate.example.com/secret', 'https://gate.example.com/secret'],
  ])('normalises %s to %s (case, default port, query and fragment ignored)', (raw, expected) => {
    expect(normalizeHtu(raw)).toBe(expected);
  });

  it.each(['/secret', 'ftp://gate/secret', 'https://user:pw@gate/secret', 'not a url'])(
    'refuses %s',
    (raw) => {
      expect(normalizeHtu(raw)).toBeUndefined();
    },
  );

  it('gives the same answer for a repeated URL, refused or not, as for its first sight', () => {
    for (let round = 0; round < 3; round++) {
      expect(normalizeHtu('https://user:pw@gate/secret')).toBeUndefined();
      expect(normalizeHtu('https://Gate.Example.com:443/secret?r=1')).toBe(
        'https://gate.example.com/secret',
      );
    }
  });
});

describe('externalUrl', () => {
  it('joins the configured origin and the original path', () => {
    expect(externalUrl('https://gate.example.com', '/secret')).toBe(
      'https://gate.example.com/secret',
    );
    expect(externalUrl('https://gate.example.com/', '/secret')).toBe(
      'https://gate.example.com/secret',
    );
  });

  it('gives nothing without an origin, without a path, or for a path that would change the host', () => {
    expect(externalUrl(undefined, '/secret')).toBeUndefined();
    expect(externalUrl('https://gate.example.com', undefined)).toBeUndefined();
    expect(externalUrl('https://gate.example.com', 'secret')).toBeUndefined();
    expect(externalUrl('https://gate.example.com', '//evil.example/secret')).toBeUndefined();
  });
});

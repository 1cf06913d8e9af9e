// The signature segment's spelling: one per signature (RFC 4648 §3.5 unused bits), so a token has
// one spelling and one cache entry; and the token an Authorization header holds, with only the
// spaces HTTP allows around it removed.
import { describe, expect, it } from 'vitest';
import { VerifyError } from '../errors.js';
import {
  assertBearerSyntax,
  hasCanonicalSignature,
  lastDot,
  readCredentials,
} from './token-shape.js';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const spelled = (bytes: number, last: string) =>
  `h.p.${Buffer.alloc(bytes, 7).toString('base64url').slice(0, -1)}${last}`;

describe('a canonical signature segment', () => {
  it.each([
    // 256 bytes (RS256, 2048-bit key): 342 characters, the last carries 2 bits and 4 unused.
    [256, 16],
    // 64 bytes (ES256, Ed25519): 86 characters, the same.
    [64, 16],
    // 96 bytes (ES384): 128 characters, no unused bit.
    [96, 1],
    // 132 bytes (ES512): 176 characters, no unused bit.
    [132, 1],
    // 65 bytes: 87 characters, the last carries 4 bits and 2 unused.
    [65, 4],
  ])(
    'of %i bytes is accepted in exactly one spelling of its %i that decode alike',
    (bytes, alike) => {
      const canonical = Buffer.alloc(bytes, 7).toString('base64url');
      const variants = [...ALPHABET]
        .map((last) => spelled(bytes, last))
        .filter((jws) => Buffer.from(jws.slice(4), 'base64url').equals(Buffer.alloc(bytes, 7)));
      expect(variants).toHaveLength(alike);
      expect(variants.filter(hasCanonicalSignature)).toEqual([`h.p.${canonical}`]);
    },
  );

  it('refuses a segment with a character left over (length mod 4 = 1)', () => {
    expect(hasCanonicalSignature('h.p.AAAAA')).toBe(false);
    expect(hasCanonicalSignature('h.p.AAAA')).toBe(true);
  });
});

describe('the last dot of a compact JWS', () => {
  it.each([
    '',
    'abc',
    'a.b',
    'a.b.c',
    'aa.bb.cc.dd',
    '.',
    '..',
    'a..',
    '..c',
    '.b.',
    'x.'.repeat(50),
  ])('is where lastIndexOf finds it in %j', (text) =>
    expect(lastDot(text)).toBe(text.lastIndexOf('.')),
  );
});

describe('the token of an Authorization header', () => {
  it.each([
    ['Bearer abc', 'abc'],
    ['bearer    abc', 'abc'],
    // A field value's trailing OWS (RFC 9110 §5.6.3), where a proxy left it.
    ['Bearer abc \t ', 'abc'],
  ])('reads %j as %j', (authorization, token) => {
    expect(readCredentials(authorization, false)).toEqual({ scheme: 'bearer', token });
  });

  // Found by the fuzzing lane (test/containers/fuzz.test.ts): a valid token after "Bearer \t" was
  // accepted, as String.trim took the tab; so would \v, \f and Unicode spaces that no HTTP parser
  // removes, each a new spelling of the token.
  it.each(['\t', '\v', '\f', '\u00a0', '\ufeff', '\u2028', '\u3000'])(
    'keeps %j before the token as part of it, which the b64token check refuses',
    (space) => {
      const { token } = readCredentials(`Bearer ${space}abc`, false)!;
      expect(token).toBe(`${space}abc`);
      expect(() => assertBearerSyntax(token)).toThrow(VerifyError);
    },
  );

  it.each(['\v', '\f', '\u00a0', '\ufeff', '\u2028', '\u3000'])(
    'keeps %j after the token as part of it',
    (space) => {
      expect(readCredentials(`Bearer abc${space}`, false)?.token).toBe(`abc${space}`);
    },
  );
});

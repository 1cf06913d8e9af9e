import { describe, expect, it } from 'vitest';
import cloudFront from './cloudfront-cookies.js';

const grant = {
  policy: 'eyJTdGF0ZW1lbnQiOltdfQ__',
  signature: 'abc~def-ghi_',
  keyPairId: 'K2JCJMDEHXQW5F',
};
const attributes = '; Secure; HttpOnly; SameSite=Lax; Path=/';

describe('cloudFrontCookies', () => {
  it('turns a complete grant into the three CloudFront cookies, Secure, HttpOnly, SameSite=Lax', () => {
    expect(cloudFront.cloudFrontCookies(grant)).toEqual([
      `CloudFront-Policy=eyJTdGF0ZW1lbnQiOltdfQ__${attributes}`,
      `CloudFront-Signature=abc~def-ghi_${attributes}`,
      `CloudFront-Key-Pair-Id=K2JCJMDEHXQW5F${attributes}`,
    ]);
  });

  it('adds CloudFront-Hash-Algorithm, Domain and Expires when the verifier gives them', () => {
    const cookies = cloudFront.cloudFrontCookies({
      ...grant,
      hashAlgorithm: 'SHA256',
      domain: 'cdn.example.test',
      expires: '1893456000',
    });
    const tail = `${attributes}; Domain=cdn.example.test; Expires=Tue, 01 Jan 2030 00:00:00 GMT`;
    expect(cookies).toEqual([
      `CloudFront-Policy=eyJTdGF0ZW1lbnQiOltdfQ__${tail}`,
      `CloudFront-Signature=abc~def-ghi_${tail}`,
      `CloudFront-Key-Pair-Id=K2JCJMDEHXQW5F${tail}`,
      `CloudFront-Hash-Algorithm=SHA256${tail}`,
    ]);
  });

  it("scopes the cookies to the resource's path the verifier derived", () => {
    const cookies = cloudFront.cloudFrontCookies({ ...grant, path: '/private/' });
    expect(cookies[0]).toBe(
      'CloudFront-Policy=eyJTdGF0ZW1lbnQiOltdfQ__; Secure; HttpOnly; SameSite=Lax; Path=/private/',
    );
  });

  it('leaves Expires out when the value is not epoch seconds', () => {
    const [first] = cloudFront.cloudFrontCookies({ ...grant, expires: 'tomorrow' });
    expect(first).toBe(`CloudFront-Policy=eyJTdGF0ZW1lbnQiOltdfQ__${attributes}`);
  });

  it.each([
    ['no grant at all', {}],
    ['no policy', { ...grant, policy: '' }],
    ['no signature', { ...grant, signature: undefined }],
    ['no key pair id', { ...grant, keyPairId: '' }],
  ])('sets no cookie for an incomplete grant (%s)', (_case, input) => {
    expect(cloudFront.cloudFrontCookies(input)).toEqual([]);
  });

  it.each([
    ['a policy that would add attributes', { ...grant, policy: 'abc; Domain=evil.test' }],
    ['a signature with a comma', { ...grant, signature: 'a,b' }],
    ['a key pair id with a space', { ...grant, keyPairId: 'K2 X' }],
    ['an unknown hash algorithm', { ...grant, hashAlgorithm: 'MD5' }],
    ['a domain with a semicolon', { ...grant, domain: 'example.test; Path=/x' }],
    ['a path with a semicolon', { ...grant, path: '/private/; Domain=evil.test' }],
    ['a path that is not absolute', { ...grant, path: 'private/' }],
  ])('sets no cookie at all for a malformed grant (%s)', (_case, input) => {
    expect(cloudFront.cloudFrontCookies(input)).toEqual([]);
  });
});

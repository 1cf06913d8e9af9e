import { describe, expect, it } from 'vitest';
import dpopHeader from './dpop-header.js';

function request(headers: [string, string][]) {
  const authorization = headers.find(([name]) => name.toLowerCase() === 'authorization')?.[1];
  return { rawHeadersIn: headers, headersIn: { Authorization: authorization } } as never;
}

describe('the DPoP header NGINX passes to the verifier', () => {
  it('passes the one proof as it came', () => {
    expect(dpopHeader.proof(request([['DPoP', 'a.b.c']]))).toBe('a.b.c');
    expect(dpopHeader.proof(request([['dpop', 'a.b.c']]))).toBe('a.b.c');
  });

  it('passes nothing when there is no proof', () => {
    expect(dpopHeader.proof(request([['Authorization', 'DPoP x']]))).toBe('');
  });

  it('refuses two DPoP headers (RFC 9449 §4.3: exactly one)', () => {
    const r = request([
      ['DPoP', 'a.b.c'],
      ['DPoP', 'd.e.f'],
    ]);
    expect(dpopHeader.proof(r)).toBe(dpopHeader.REFUSED);
  });

  it('refuses an oversized proof, and passes a full-size one beside a 16 KiB token', () => {
    const big = 'a'.repeat(dpopHeader.MAX_PROOF_BYTES + 1);
    expect(dpopHeader.proof(request([['DPoP', big]]))).toBe(dpopHeader.REFUSED);
    const proof = 'p'.repeat(dpopHeader.MAX_PROOF_BYTES);
    const r = request([
      ['Authorization', `DPoP ${'t'.repeat(16_384)}`],
      ['DPoP', proof],
    ]);
    expect(dpopHeader.proof(r)).toBe(proof);
  });
});

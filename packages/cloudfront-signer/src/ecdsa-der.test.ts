import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { p1363ToDer } from './ecdsa-der.js';

describe('p1363ToDer', () => {
  it('writes minimal INTEGERs: leading zeros dropped, 0x00 added before a set top bit', () => {
    const raw = new Uint8Array(64);
    raw[31] = 0x01; // r = 1
    raw[32] = 0x80; // s = 0x80 followed by 31 zero bytes
    const der = p1363ToDer(raw);
    expect(Buffer.from(der.subarray(0, 5)).toString('hex')).toBe('3026020101');
    expect(Buffer.from(der.subarray(5, 9)).toString('hex')).toBe('02210080');
    expect(der.length).toBe(2 + 3 + 35);
  });

  it('keeps a single zero byte for a zero half', () => {
    expect(Buffer.from(p1363ToDer(new Uint8Array(64))).toString('hex')).toBe(
      '300602010002010000'.slice(0, 16),
    );
  });

  it('agrees with OpenSSL: every converted node:crypto P1363 signature verifies as DER', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    for (let i = 0; i < 300; i++) {
      const data = Buffer.from(`policy ${i}`);
      const raw = sign('sha256', data, { key: privateKey, dsaEncoding: 'ieee-p1363' });
      expect(verify('sha256', data, publicKey, p1363ToDer(raw))).toBe(true);
    }
  });

  it('refuses anything but a 64-byte P-256 signature', () => {
    expect(() => p1363ToDer(new Uint8Array(96))).toThrow(TypeError);
  });
});

// Server nonces (RFC 9449 §8/§9) without shared state: the current time window's number and an
// HMAC of it under a key every replica holds, accepted in its window and the next (so a client
// that just fetched one is never refused at a boundary).
import { createHmac, timingSafeEqual } from 'node:crypto';

export interface NonceSource {
  /** The nonce for now, to send as `DPoP-Nonce`. */
  current(): string;
  /** True when `nonce` came from this key in the current or the previous window. */
  isValid(nonce: unknown): boolean;
}

export function createNonceSource(options: {
  key: string;
  /** Seconds per window. */
  windowSeconds: number;
  /** Milliseconds since the epoch. */
  now: () => number;
}): NonceSource {
  const key = Buffer.from(options.key, 'utf8');
  const windowMs = Math.max(1, options.windowSeconds) * 1000;
  let cached: { window: number; nonce: string } | undefined;

  const mac = (window: number) =>
    createHmac('sha256', key).update(`dpop-nonce:${window}`).digest().subarray(0, 18);
  const make = (window: number) => `${window.toString(36)}.${mac(window).toString('base64url')}`;
  const windowAt = () => Math.floor(options.now() / windowMs);

  return {
    current() {
      const window = windowAt();
      if (cached?.window !== window) cached = { window, nonce: make(window) };
      return cached.nonce;
    },
    isValid(nonce) {
      if (typeof nonce !== 'string' || nonce.length > 64) return false;
      const dot = nonce.indexOf('.');
      if (dot < 1) return false;
      const window = Number.parseInt(nonce.slice(0, dot), 36);
      const current = windowAt();
      if (!Number.isSafeInteger(window) || (window !== current && window !== current - 1))
        return false;
      if (nonce.slice(0, dot) !== window.toString(36)) return false;
      const given = Buffer.from(nonce.slice(dot + 1), 'base64url');
      const expected = mac(window);
      return given.length === expected.length && timingSafeEqual(given, expected);
    },
  };
}

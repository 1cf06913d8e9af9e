// Server nonces (RFC 9449 §8/§9) without shared state: the current time window's number and an
// HMAC of it under a key every replica holds, accepted in its window and the next (so a client
// that just fetched one is never refused at a boundary).
import { createHmac } from 'node:crypto';
import type { Clock, Seconds } from '../clock.js';

/** `current()` is the `DPoP-Nonce` to send; `isValid` accepts it and the previous one. */
export function createNonceSource(secret: string, windowSeconds: Seconds, now: Clock) {
  const key = Buffer.from(secret, 'utf8');
  const length = Math.max(1, windowSeconds);
  const mac = (window: number) =>
    createHmac('sha256', key).update(`dpop-nonce:${window}`).digest().subarray(0, 18);
  const make = (window: number) => `${window.toString(36)}.${mac(window).toString('base64url')}`;
  let cached = { window: Number.NaN, nonce: '' };
  const current = () => {
    const window = Math.floor(now() / length);
    if (cached.window !== window) cached = { window, nonce: make(window) };
    return cached.nonce;
  };
  return {
    current,
    // No secret (every answer hands out the current one): compared plainly, the previous one
    // rebuilt only when the current one does not match.
    isValid: (nonce: unknown) =>
      typeof nonce === 'string' && (nonce === current() || nonce === make(cached.window - 1)),
  };
}

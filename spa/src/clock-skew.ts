// How far this browser's clock is from the gate's, from the `Date` header of a same-origin answer.
// DPoP proofs carry the client's `iat` and the gate accepts a small window around its own clock
// (RFC 9449 §11.1), so a browser whose clock is minutes off would have every proof refused;
// oauth4webapi adds this offset to `iat`.

/** Below this the offset is HTTP-date rounding and latency, not a wrong clock. */
const NOISE_SECONDS = 2;

/** Seconds to add to the local clock to get the server's (0 when unknown or within noise). */
export function clockSkewSeconds(dateHeader: string | null, localNowMs: number): number {
  if (!dateHeader) return 0;
  const serverMs = Date.parse(dateHeader);
  if (Number.isNaN(serverMs)) return 0;
  const skew = Math.round((serverMs - localNowMs) / 1000);
  return Math.abs(skew) <= NOISE_SECONDS ? 0 : skew;
}

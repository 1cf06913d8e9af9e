// Time in the domain is counted in epoch seconds, as JWT's `exp`, `iat` and `nbf` are (RFC 7519
// §2, NumericDate). Milliseconds exist only at the adapters that want them (timers, lru-cache,
// Redis `PX`, fetch timeouts), each converting where it calls them.

/** Seconds since 1970-01-01T00:00:00Z, fractional. */
export type EpochSeconds = number;

/** A length of time in seconds (a TTL, a window, a cooldown). */
export type Seconds = number;

/** The domain's clock; tests inject one they move by hand. */
export type Clock = () => EpochSeconds;

/** The system clock in epoch seconds. */
export const systemClock: Clock = () => Date.now() / 1000;

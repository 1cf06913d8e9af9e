// Time values in a policy: whole epoch seconds, checked once, and expiry bucketing.
// Bucketing rounds an expiry *up* to the end of its window so that every request inside one window
// asks for the same policy, which is then signed once and served from the cache.

/** Above this a "seconds" value is almost certainly milliseconds (year 2286+). */
const MAX_EPOCH_SECONDS = 9_999_999_999;

/**
 * Reads whole epoch seconds or a Date. A Date with milliseconds is rounded towards the narrower
 * grant: an expiry down, a start up.
 */
export function toEpochSeconds(value: unknown, field: 'expires' | 'notBefore'): number {
  let seconds: number;
  if (value instanceof Date) {
    const ms = value.getTime();
    if (!Number.isFinite(ms)) throw new TypeError(`"${field}" is an invalid Date`);
    seconds = field === 'expires' ? Math.floor(ms / 1000) : Math.ceil(ms / 1000);
  } else if (typeof value === 'number' && Number.isSafeInteger(value)) {
    seconds = value;
  } else {
    throw new TypeError(`"${field}" must be whole epoch seconds or a Date`);
  }
  if (seconds <= 0) throw new TypeError(`"${field}" must be a positive epoch time in seconds`);
  if (seconds > MAX_EPOCH_SECONDS)
    throw new TypeError(`"${field}" looks like milliseconds; pass epoch seconds`);
  return seconds;
}

/** Rounds `expires` up to the next multiple of `bucketSeconds` (0 or 1: unchanged). Never earlier. */
export function bucketExpiry(expires: number, bucketSeconds: number): number {
  if (bucketSeconds <= 1) return expires;
  return Math.ceil(expires / bucketSeconds) * bucketSeconds;
}

/** Validates the bucket width given to a factory. */
export function checkBucketSeconds(value: unknown): number {
  if (value === undefined) return 0;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > 86_400) {
    throw new TypeError('"bucketSeconds" must be a whole number of seconds from 0 to 86400');
  }
  return value;
}

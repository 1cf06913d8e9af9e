// When to fetch a set again so that no minted value lapses in the app's hands. Counted on the
// gate's clock (its `Date` header against its `expires_at`), so a page whose clock is off by
// minutes still renews on time; the delay that comes out runs on the page's own timers.

export interface RenewalPolicy {
  /** Part of a value's remaining lifetime kept as margin before its expiry (0.1 = 10 %). */
  readonly marginRatio: number;
  /** The margin is never below this many seconds. */
  readonly minMarginSeconds: number;
  /** Renewals are never closer together than this, even for values shorter than the margin. */
  readonly minDelaySeconds: number;
}

export const DEFAULT_RENEWAL: RenewalPolicy = Object.freeze({
  marginRatio: 0.1,
  minMarginSeconds: 5,
  minDelaySeconds: 1,
});

/**
 * The default policy with the app's changes, checked once: a margin ratio in [0, 1), a margin and
 * a delay that are not negative, and a delay above 0 (else a short value would loop at once).
 */
export function renewalPolicy(changes: Partial<RenewalPolicy> = {}): RenewalPolicy {
  const policy = { ...DEFAULT_RENEWAL, ...changes };
  const problems = [
    policy.marginRatio >= 0 && policy.marginRatio < 1 ? '' : '"marginRatio" must be in [0, 1)',
    policy.minMarginSeconds >= 0 ? '' : '"minMarginSeconds" must be 0 or more',
    policy.minDelaySeconds > 0 ? '' : '"minDelaySeconds" must be above 0',
  ].filter(Boolean);
  if (problems.length > 0) {
    throw new TypeError(`secret-gate client: renewal: ${problems.join('; ')}`);
  }
  return Object.freeze(policy);
}

/**
 * Seconds from the answer until the set should be fetched again: the earliest over its minted
 * values of `expiry − margin`, where margin = max(minMarginSeconds, marginRatio × lifetime left).
 * `gateNow` is the gate's clock at the answer (epoch seconds). Undefined for a static set.
 */
export function renewalDelaySeconds(
  expiresAt: Readonly<Record<string, number>>,
  gateNow: number,
  policy: RenewalPolicy = DEFAULT_RENEWAL,
): number | undefined {
  let earliest: number | undefined;
  for (const at of Object.values(expiresAt)) {
    const left = at - gateNow;
    const margin = Math.max(policy.minMarginSeconds, policy.marginRatio * left);
    const delay = left - margin;
    if (earliest === undefined || delay < earliest) earliest = delay;
  }
  return earliest === undefined ? undefined : Math.max(policy.minDelaySeconds, earliest);
}

/** The gate's clock at its answer from its `Date` header (epoch seconds), or the page's clock. */
export function gateClock(dateHeader: string | null, pageNowMs: number): number {
  const at = dateHeader ? Date.parse(dateHeader) : Number.NaN;
  return Math.floor((Number.isNaN(at) ? pageNowMs : at) / 1000);
}

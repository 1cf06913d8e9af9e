// A fetched set as the view lists it: one entry per value, minted ones with their expiry.
// Which entries count as sensitive decides what the view masks until the person asks to see it.
import type { SecretSet } from '@secret-gate/client';

export interface SecretEntry {
  readonly name: string;
  readonly value: string;
  /**
   * Masked by default: every value minted for the user (a presigned URL is a credential too) and
   * static keys, tokens, passwords, signatures. Plain settings (api-base) are not.
   */
  readonly sensitive: boolean;
  /** A value minted for this user: when it stops working, on the page's clock. */
  readonly expiresAt?: Date;
}

const SENSITIVE_NAME = /key|secret|token|password|passwd|credential|signature|private/i;

/** The fixed-width mask; its length never depends on the value, so it leaks nothing. */
export const MASK = '••••••••••••';

/**
 * The set's values as entries, in the gate's order. A minted value carries its expiry moved onto
 * the page's clock, so a countdown against `Date.now()` is right even when the clocks differ.
 */
export function entriesOf(set: SecretSet): SecretEntry[] {
  return Object.entries(set.values).map(([name, value]) => {
    const at = set.expiresAt[name];
    return {
      name,
      value,
      sensitive: at !== undefined || SENSITIVE_NAME.test(name),
      ...(at === undefined ? {} : { expiresAt: new Date((at - set.gateClockOffset) * 1000) }),
    };
  });
}

/** What the view shows for an entry in its current state. */
export function displayValue(entry: SecretEntry, revealed: boolean): string {
  return entry.sensitive && !revealed ? MASK : entry.value;
}

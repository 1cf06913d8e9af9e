// The body of GET /secret: a flat JSON object of named values (see the secrets file contract).
// Which entries count as sensitive decides what the view masks until the person asks to see it.

export interface SecretEntry {
  readonly name: string;
  readonly value: string;
  /** Masked by default: keys, tokens, passwords, signatures. Plain settings (api-base) are not. */
  readonly sensitive: boolean;
}

const SENSITIVE_NAME = /key|secret|token|password|passwd|credential|signature|private/i;

/** The fixed-width mask; its length never depends on the value, so it leaks nothing. */
export const MASK = '••••••••••••';

/**
 * Reads a secret set from a parsed JSON body. Accepts only an object whose values are strings or
 * numbers (numbers are shown as text); returns undefined for anything else.
 */
export function parseSecretSet(body: unknown): SecretEntry[] | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const entries: SecretEntry[] = [];
  for (const [name, value] of Object.entries(body)) {
    if (typeof value !== 'string' && typeof value !== 'number') return undefined;
    entries.push({ name, value: String(value), sensitive: SENSITIVE_NAME.test(name) });
  }
  return entries;
}

/** What the view shows for an entry in its current state. */
export function displayValue(entry: SecretEntry, revealed: boolean): string {
  return entry.sensitive && !revealed ? MASK : entry.value;
}

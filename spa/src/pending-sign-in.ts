// The one-time values of a sign-in in flight (state, nonce, PKCE verifier). They must survive the
// redirect to the IdP and back, so they sit in this tab's sessionStorage for those seconds and are
// removed when the redirect returns. Tokens are never stored here or anywhere else.

export interface PendingSignIn {
  readonly state: string;
  readonly nonce: string;
  readonly codeVerifier: string;
  readonly startedAt: number;
}

const KEY = 'secret-gate.pending-sign-in';
// A sign-in that has not come back within this window is abandoned, not resumed.
const MAX_AGE_MS = 10 * 60 * 1000;

export function savePendingSignIn(storage: Storage, pending: PendingSignIn): void {
  storage.setItem(KEY, JSON.stringify(pending));
}

/** Reads and removes the pending sign-in; undefined when absent, unreadable or too old. */
export function takePendingSignIn(storage: Storage, now: number): PendingSignIn | undefined {
  const text = storage.getItem(KEY);
  storage.removeItem(KEY);
  if (text === null) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { state, nonce, codeVerifier, startedAt } = value as Record<string, unknown>;
  if (
    typeof state !== 'string' ||
    typeof nonce !== 'string' ||
    typeof codeVerifier !== 'string' ||
    typeof startedAt !== 'number' ||
    now - startedAt > MAX_AGE_MS ||
    now < startedAt
  ) {
    return undefined;
  }
  return { state, nonce, codeVerifier, startedAt };
}

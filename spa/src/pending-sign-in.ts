// The one-time values of a sign-in in flight (state, nonce, PKCE verifier). They must survive the
// redirect to the IdP and back, so they sit in this tab's sessionStorage for those seconds and are
// removed when the redirect returns. Tokens are never stored here or anywhere else. A step-up
// sign-in also remembers what the gate asked for and which set to fetch again on the way back.
import type { StepUpRequest } from './step-up.js';

/** A step-up in flight: the gate's requirement and the set it guards (absent: the default set). */
export type PendingStepUp = StepUpRequest & { readonly set?: string };

export interface PendingSignIn {
  readonly state: string;
  readonly nonce: string;
  readonly codeVerifier: string;
  readonly startedAt: number;
  readonly stepUp?: PendingStepUp;
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
  const { state, nonce, codeVerifier, startedAt, stepUp } = value as Record<string, unknown>;
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
  const step = readStepUp(stepUp);
  if (step === null) return undefined;
  return { state, nonce, codeVerifier, startedAt, ...(step ? { stepUp: step } : {}) };
}

/** The stored step-up; undefined when there is none, null when it is not what this app wrote. */
function readStepUp(value: unknown): PendingStepUp | undefined | null {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null) return null;
  const { reason, set, acrValues, maxAge, scopes } = value as Record<string, unknown>;
  if (reason !== 'insufficient_user_authentication' && reason !== 'insufficient_scope') return null;
  if (set !== undefined && typeof set !== 'string') return null;
  if (acrValues !== undefined && !isStringList(acrValues)) return null;
  if (scopes !== undefined && !isStringList(scopes)) return null;
  if (
    maxAge !== undefined &&
    !(typeof maxAge === 'number' && Number.isInteger(maxAge) && maxAge >= 0)
  )
    return null;
  return {
    reason,
    ...(set === undefined ? {} : { set }),
    ...(acrValues === undefined ? {} : { acrValues }),
    ...(maxAge === undefined ? {} : { maxAge }),
    ...(scopes === undefined ? {} : { scopes }),
  };
}

function isStringList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}

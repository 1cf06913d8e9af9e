// What the receivers refuse and why: one error class with a closed reason union, shared by the
// token checks (event-token.ts), the store (store.ts) and the endpoints (receiver.ts).
import type { DenyCode } from '../errors.js';

/** Why a logout token or SET was refused (metric labels, logs): jose's outcomes, and our own. */
export type RefusalReason =
  | DenyCode
  | 'request_invalid'
  | 'events_invalid'
  | 'nonce_present'
  | 'subject_missing'
  | 'sub_present'
  | 'exp_present'
  | 'jti_replayed'
  | 'rate_limited'
  | 'store_unavailable';

/**
 * The one error both receivers throw; its message names the field and never echoes the token. It
 * carries no stack: a refusal is an answer, not a bug, and capturing a stack per junk push was a
 * tenth of a flood's CPU (docs/performance.md, "Junk at the receivers").
 */
export class ReceiverError extends Error {
  override readonly name = 'ReceiverError';
  readonly reason: RefusalReason;
  constructor(reason: RefusalReason, message: string) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
    this.reason = reason;
  }
}

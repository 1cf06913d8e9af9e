// What a verified SET asks of us. CAEP session-revoked and credential-change, RISC account-disabled
// and account-purged all mean "refuse this subject's tokens issued before the event"; the SSF
// verification event only proves the stream works. Subjects (RFC 9493): `iss_sub` (an issuer we
// accept tokens from), `email` (matched only against the `email` claim of verified tokens) and
// `complex` with a `user` of those formats; `opaque` only names a stream. Anything else is a
// subject we cannot match: acknowledged and ignored, as is an unknown event type.
import type { Revocation } from './revocation.js';
import { subjectString, type VerifiedSet } from './event-token.js';

const CAEP = 'https://schemas.openid.net/secevent/caep/event-type/';
const RISC = 'https://schemas.openid.net/secevent/risc/event-type/';
const VERIFICATION_EVENT = 'https://schemas.openid.net/secevent/ssf/event-type/verification';

/** The event types acted on, with the short names used in metrics and logs. */
const REVOKING_EVENTS: ReadonlyMap<string, string> = new Map([
  [`${CAEP}session-revoked`, 'session-revoked'],
  [`${CAEP}credential-change`, 'credential-change'],
  [`${RISC}account-disabled`, 'account-disabled'],
  [`${RISC}account-purged`, 'account-purged'],
]);

export interface SetMeaning {
  /** The short name in metrics and logs (`session-revoked`, `verification`, `unknown`). */
  readonly event: string;
  readonly revocations: readonly Revocation[];
  /** Set when nothing is to be done: the SET is acknowledged and ignored. */
  readonly ignored?: 'event_unknown' | 'subject_unknown';
}

export function interpretSet(set: VerifiedSet, nowSeconds: number): SetMeaning {
  if (set.eventType === VERIFICATION_EVENT) return { event: 'verification', revocations: [] };
  const event = REVOKING_EVENTS.get(set.eventType);
  if (event === undefined) return { event: 'unknown', revocations: [], ignored: 'event_unknown' };
  // SSF 1.0 puts the subject in `sub_id`; earlier drafts (and CAEP 1.0 examples) in the event.
  const subject = readSubject(set.subId ?? set.event.subject);
  if (subject === undefined) return { event, revocations: [], ignored: 'subject_unknown' };
  const stamp = set.event.event_timestamp;
  const when = typeof stamp === 'number' && Number.isFinite(stamp) ? stamp : set.iat;
  // Whole-second `iat`s: a token of the event's second counts as older. Never ahead of now, so a
  // transmitter cannot revoke tokens that do not exist yet.
  const at = Math.min(when + 1, nowSeconds);
  return { event, revocations: [{ ...subject, at }] };
}

type Subject = Omit<Revocation, 'at'>;

function readSubject(value: unknown, depth = 0): Subject | undefined {
  if (value === null || typeof value !== 'object' || depth > 1) return undefined;
  const id = value as Record<string, unknown>;
  switch (id.format) {
    case 'iss_sub': {
      const iss = subjectString(id.iss);
      const sub = subjectString(id.sub);
      return iss && sub ? { kind: 'sub', iss, value: sub } : undefined;
    }
    case 'email': {
      const email = subjectString(id.email);
      return email ? { kind: 'email', iss: '', value: email.toLowerCase() } : undefined;
    }
    case 'complex':
      return readSubject(id.user, depth + 1);
    default:
      return undefined;
  }
}

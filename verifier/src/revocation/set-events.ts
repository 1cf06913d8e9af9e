// Security Event Tokens (RFC 8417 under the SSF 1.0 SET profile), and what each asks of us: the
// watermarks to write, or nothing (acknowledged and ignored).
import type { KeySet } from '../token/key-set.js';
import {
  isObject,
  ReceiverError,
  subjectString,
  verifyEventToken,
  type EventVerifier,
  type Sender,
} from './event-token.js';
import type { Revocation } from './watermarks.js';

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

/**
 * The SSF 1.0 SET profile: `typ: secevent+jwt`, no JWT `sub` and no `exp`, `iss` the transmitter
 * whose ssf-configuration was read (its keys), `aud` naming this receiver, exactly one event; no
 * age limit (polled SETs wait at the transmitter until acknowledged). CAEP session-revoked and
 * credential-change, RISC account-disabled and account-purged mean "refuse this subject's tokens
 * issued before the event"; the SSF verification event only proves the stream works. Subjects
 * (RFC 9493): `iss_sub` (an issuer we accept tokens from), `email` (matched only against the
 * `email` claim of verified tokens) and `complex` with a `user` of those formats; `opaque` only
 * names a stream. A subject we cannot match, or an unknown event type, is acknowledged and ignored.
 */
export function createSetVerifier(
  transmitter: string,
  audience: string,
  keys: KeySet,
  now: () => number,
): EventVerifier {
  const sender: Sender = {
    issuer: transmitter,
    keys,
    audience,
    // The SSF interoperability profile signs with RS256; the other asymmetric ones are fine.
    algorithms: ['RS256', 'PS256', 'ES256', 'EdDSA'],
    typ: 'secevent+jwt',
    clockTolerance: 30,
  };
  return async function verifySet(token) {
    const { claims, jti, iat, events } = await verifyEventToken(token, sender, now);
    if ('sub' in claims)
      throw new ReceiverError(
        'sub_present',
        'a SET must not carry "sub" (the subject is in "sub_id")',
      );
    if ('exp' in claims) throw new ReceiverError('exp_present', 'a SET must not carry "exp"');
    const types = Object.keys(events);
    if (types.length !== 1)
      throw new ReceiverError(
        'events_invalid',
        `"events" must hold exactly one event, not ${types.length}`,
      );
    const eventType = types[0]!;
    const event = events[eventType];
    if (!isObject(event))
      throw new ReceiverError('events_invalid', 'the event must be a JSON object');
    const none = { sender: transmitter, jti, revocations: [] };
    if (eventType === VERIFICATION_EVENT) return { ...none, event: 'verification' };
    const name = REVOKING_EVENTS.get(eventType);
    const unknown = eventType.slice(0, 200);
    if (name === undefined) return { ...none, event: unknown, ignored: 'event_unknown' };
    // SSF 1.0 puts the subject in `sub_id`; earlier drafts (and CAEP 1.0 examples) in the event.
    const subject = readSubject(claims.sub_id ?? event.subject);
    if (subject === undefined) return { ...none, event: name, ignored: 'subject_unknown' };
    const stamp = event.event_timestamp;
    const when = typeof stamp === 'number' && Number.isFinite(stamp) ? stamp : iat;
    // Whole-second `iat`s: a token of the event's second counts as older. Never ahead of now, so a
    // transmitter cannot revoke tokens that do not exist yet.
    const at = Math.min(when + 1, now() / 1000);
    return { ...none, event: name, revocations: [{ ...subject, at }] };
  };
}

function readSubject(value: unknown, depth = 0): Omit<Revocation, 'at'> | undefined {
  if (!isObject(value) || depth > 1) return undefined;
  switch (value.format) {
    case 'iss_sub': {
      const iss = subjectString(value.iss);
      const sub = subjectString(value.sub);
      return iss && sub ? { kind: 'sub', iss, value: sub } : undefined;
    }
    case 'email': {
      const email = subjectString(value.email);
      return email ? { kind: 'email', iss: '', value: email.toLowerCase() } : undefined;
    }
    case 'complex':
      return readSubject(value.user, depth + 1);
    default:
      return undefined;
  }
}

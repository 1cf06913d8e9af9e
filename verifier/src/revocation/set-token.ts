// Security Event Tokens under the SSF 1.0 SET profile: `typ: secevent+jwt`, no JWT `sub` and no
// `exp`, `iss` the transmitter whose ssf-configuration was read, `aud` naming this receiver, a
// `jti` (replay-checked by the caller) and exactly one event. What the event means for tokens is
// in set-events.ts.
import type { KeySet } from '../token/key-set.js';
import { verifyEventToken } from './event-token.js';
import { ReceiverError } from './receiver-error.js';

export interface VerifiedSet {
  readonly jti: string;
  readonly iat: number;
  readonly eventType: string;
  readonly event: Record<string, unknown>;
  /** SSF 1.0 `sub_id` (the subject of the event), when present. */
  readonly subId: unknown;
}

export type SetVerifier = (token: string) => Promise<VerifiedSet>;

export function createSetVerifier(options: {
  readonly transmitter: string;
  readonly audience: string;
  readonly algorithms: readonly string[];
  readonly keys: KeySet;
  readonly clockTolerance: number;
  readonly now: () => number;
}): SetVerifier {
  return async function verifySet(token) {
    const { payload, jti, iat, events } = await verifyEventToken(token, {
      issuer: options.transmitter,
      audiences: [options.audience],
      algorithms: options.algorithms,
      keys: options.keys,
      typ: 'secevent+jwt',
      typRequired: true,
      clockTolerance: options.clockTolerance,
      // Polled SETs wait at the transmitter until acknowledged; their age says nothing.
      maxAge: undefined,
      now: options.now,
    });
    if ('sub' in payload)
      throw new ReceiverError(
        'sub_present',
        'a SET must not carry "sub" (the subject is in "sub_id")',
      );
    if ('exp' in payload) throw new ReceiverError('exp_present', 'a SET must not carry "exp"');
    const types = Object.keys(events);
    if (types.length !== 1)
      throw new ReceiverError(
        'events_invalid',
        `"events" must hold exactly one event, not ${types.length}`,
      );
    const eventType = types[0]!;
    const event = events[eventType];
    if (event === null || typeof event !== 'object' || Array.isArray(event))
      throw new ReceiverError('events_invalid', 'the event must be a JSON object');
    return { jti, iat, eventType, event: event as Record<string, unknown>, subId: payload.sub_id };
  };
}

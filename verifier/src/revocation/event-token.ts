// The two kinds of pushed token, verified by jose's jwtVerify with our key sets: logout tokens
// (OIDC Back-Channel Logout 1.0 §2.4–2.6) and Security Event Tokens (RFC 8417 under the SSF 1.0 SET
// profile). Both are a JWS by the sender's keys with an exact `iss`, an `aud` naming us, an
// explicit `typ`, a `jti` (replay-checked by receiver.ts), an `iat` and an `events` object; each
// verifier below adds its own rules. What a SET asks of us is in set-events.ts.
import { decodeJwt, jwtVerify, type JWTPayload } from 'jose';
import type { VerifierConfig } from '../config/model.js';
import type { DenyCode } from '../errors.js';
import { toVerifyError } from '../token/jwt-verifier.js';
import type { KeySet } from '../token/key-set.js';
import type { Revocation } from './revocation.js';

/**
 * Why a logout token or SET was refused, a closed union (metric labels, logs): jose's outcomes
 * under the access-token codes, and the receivers' own.
 */
export type RefusalReason =
  | DenyCode
  | 'request_invalid'
  | 'events_invalid'
  | 'nonce_present'
  | 'subject_missing'
  | 'sub_present'
  | 'exp_present'
  | 'jti_replayed'
  | 'store_unavailable';

/** The one error both receivers throw; its message names the field and never echoes the token. */
export class ReceiverError extends Error {
  override readonly name = 'ReceiverError';
  constructor(
    readonly reason: RefusalReason,
    message: string,
  ) {
    super(message);
  }
}

/** No sender needs more: a logout token is a few hundred bytes, a SET rarely over 2 KiB. */
const MAX_EVENT_TOKEN_BYTES = 8192;

const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

interface Rules {
  readonly issuer: string;
  readonly audiences: readonly string[];
  readonly algorithms: readonly string[];
  readonly keys: KeySet;
  /** The media type without `application/` (`logout+jwt`, `secevent+jwt`). */
  readonly typ: string;
  /** True: the header must carry `typ`; false: checked only when present (BCL §2.4). */
  readonly typRequired: boolean;
  readonly clockTolerance: number;
  /** Seconds; undefined: any age. */
  readonly maxAge: number | undefined;
}

interface EventToken {
  readonly claims: JWTPayload & Record<string, unknown>;
  readonly jti: string;
  readonly iat: number;
  readonly events: Record<string, unknown>;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function typMatches(typ: unknown, expected: string): boolean {
  return typeof typ === 'string' && typ.toLowerCase().replace(/^application\//, '') === expected;
}

async function verifyEventToken(
  token: string,
  rules: Rules,
  now: () => number,
): Promise<EventToken> {
  if (token.length > MAX_EVENT_TOKEN_BYTES)
    throw new ReceiverError(
      'token_malformed',
      `the token is longer than ${MAX_EVENT_TOKEN_BYTES} bytes`,
    );
  let claims: EventToken['claims'];
  try {
    ({ payload: claims } = await jwtVerify<Record<string, unknown>>(
      token,
      // jose calls this once the header is parsed and its `alg` allowed, before the signature.
      (header) => {
        if (header.typ === undefined ? rules.typRequired : !typMatches(header.typ, rules.typ))
          throw new ReceiverError('typ_mismatch', `"typ" header must be "${rules.typ}"`);
        return rules.keys.getKey(header);
      },
      {
        issuer: rules.issuer,
        audience: [...rules.audiences],
        algorithms: [...rules.algorithms],
        clockTolerance: rules.clockTolerance,
        requiredClaims: ['iat', 'jti'],
        currentDate: new Date(now()),
        ...(rules.maxAge === undefined ? {} : { maxTokenAge: rules.maxAge }),
      },
    ));
  } catch (error) {
    if (error instanceof ReceiverError) throw error;
    const { code, message } = toVerifyError(error);
    throw new ReceiverError(code, message);
  }
  const { jti, iat, events } = claims;
  if (typeof jti !== 'string' || jti.length === 0 || jti.length > 256)
    throw new ReceiverError('claim_invalid', '"jti" claim must be a string of 1 to 256 characters');
  // jose checks a future `iat` only together with `maxTokenAge`, which SETs do not have.
  if (typeof iat !== 'number' || iat > now() / 1000 + rules.clockTolerance)
    throw new ReceiverError('claim_invalid', '"iat" claim is in the future');
  if (!isObject(events))
    throw new ReceiverError('events_invalid', '"events" claim must be a JSON object');
  return { claims, jti, iat, events };
}

export interface VerifiedLogout {
  readonly issuer: string;
  readonly jti: string;
  readonly revocations: readonly Revocation[];
}

export type LogoutTokenVerifier = (token: string) => Promise<VerifiedLogout>;

/**
 * OIDC Back-Channel Logout 1.0 §2.6: a logout token is verified like an ID token (signature by
 * the issuer's keys, `iss`, `aud` one of the issuer's `logoutAudiences`, `iat` within
 * `logoutTokenMaxAge`, `typ: logout+jwt` when sent), MUST carry `sub` or `sid` and the
 * back-channel-logout member in `events`, MUST NOT carry `nonce`. It revokes every token of that
 * subject and/or session issued before its `iat`. Undefined when no issuer lists logout audiences.
 */
export function createLogoutTokenVerifier(
  config: Pick<VerifierConfig, 'issuers' | 'revocation'>,
  keySets: ReadonlyMap<string, KeySet>,
  now: () => number,
): LogoutTokenVerifier | undefined {
  const senders = new Map<string, Rules>();
  for (const issuer of config.issuers.values()) {
    const keys = keySets.get(issuer.issuer);
    if (issuer.type !== 'jwt' || issuer.logoutAudiences.length === 0 || keys === undefined)
      continue;
    senders.set(issuer.issuer, {
      issuer: issuer.issuer,
      audiences: issuer.logoutAudiences,
      algorithms: issuer.algorithms,
      keys,
      typ: 'logout+jwt',
      typRequired: false,
      clockTolerance: issuer.clockTolerance,
      maxAge: config.revocation.logoutTokenMaxAge,
    });
  }
  if (senders.size === 0) return undefined;

  return async function verifyLogoutToken(token) {
    // The unverified `iss` only picks the sender's rules; everything is verified afterwards.
    let sender: unknown;
    try {
      sender = decodeJwt(token).iss;
    } catch {
      throw new ReceiverError('token_malformed', 'the token is not a JWT');
    }
    const rules = typeof sender === 'string' ? senders.get(sender) : undefined;
    if (rules === undefined)
      throw new ReceiverError(
        'issuer_unknown',
        '"iss" is not an issuer whose logout tokens are accepted',
      );
    const { claims, jti, iat, events } = await verifyEventToken(token, rules, now);
    if (!isObject(events[BACKCHANNEL_LOGOUT_EVENT]))
      throw new ReceiverError(
        'events_invalid',
        `"events" has no "${BACKCHANNEL_LOGOUT_EVENT}" object`,
      );
    if ('nonce' in claims)
      throw new ReceiverError('nonce_present', 'a logout token must not carry "nonce"');
    const sub = subjectString(claims.sub);
    const sid = subjectString(claims.sid);
    if (sub === undefined && sid === undefined)
      throw new ReceiverError('subject_missing', 'a logout token must carry "sub" or "sid"');
    // The IdP's own clock dated the logout; its tokens are dated by the same clock. A token issued
    // in the logout's second counts as older (whole-second `iat`s cannot tell them apart).
    const at = Math.min(iat + 1, now() / 1000 + rules.clockTolerance);
    const revocations: Revocation[] = [];
    if (sub !== undefined) revocations.push({ kind: 'sub', iss: rules.issuer, value: sub, at });
    if (sid !== undefined) revocations.push({ kind: 'sid', iss: rules.issuer, value: sid, at });
    return { issuer: rules.issuer, jti, revocations };
  };
}

/** A subject, session or address as a string of 1 to 1024 characters; anything else is ignored. */
export function subjectString(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 && value.length <= 1024 ? value : undefined;
}

export interface VerifiedSet {
  readonly jti: string;
  readonly iat: number;
  readonly eventType: string;
  readonly event: Record<string, unknown>;
  /** SSF 1.0 `sub_id` (the subject of the event), when present. */
  readonly subId: unknown;
}

export type SetVerifier = (token: string) => Promise<VerifiedSet>;

/**
 * The SSF 1.0 SET profile: `typ: secevent+jwt`, no JWT `sub` and no `exp`, `iss` the transmitter
 * whose ssf-configuration was read (its keys), `aud` naming this receiver, exactly one event.
 */
export function createSetVerifier(
  transmitter: string,
  audience: string,
  keys: KeySet,
  now: () => number,
): SetVerifier {
  const rules: Rules = {
    issuer: transmitter,
    audiences: [audience],
    // The SSF interoperability profile signs with RS256; the other asymmetric ones are fine.
    algorithms: ['RS256', 'PS256', 'ES256', 'EdDSA'],
    keys,
    typ: 'secevent+jwt',
    typRequired: true,
    clockTolerance: 30,
    // Polled SETs wait at the transmitter until acknowledged; their age says nothing.
    maxAge: undefined,
  };
  return async function verifySet(token) {
    const { claims, jti, iat, events } = await verifyEventToken(token, rules, now);
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
    return { jti, iat, eventType, event, subId: claims.sub_id };
  };
}

// The pushed tokens, verified by jose's jwtVerify with our key sets: what logout tokens (OIDC
// Back-Channel Logout 1.0 §2.4–2.6, here) and Security Event Tokens (set-events.ts) share. Each
// becomes a ReceivedEvent: the `jti` the receiver remembers and the watermarks it writes.
import { decodeJwt, decodeProtectedHeader, jwtVerify, type JWTVerifyOptions } from 'jose';
import type { VerifierConfig } from '../config/model.js';
import type { DenyCode } from '../errors.js';
import { toVerifyError } from '../token/jwt-verifier.js';
import type { KeySet } from '../token/key-set.js';
import type { Revocation } from './watermarks.js';

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

/** A verified logout token or SET: what the receiver remembers and what it writes. */
export interface ReceivedEvent {
  /** The verified `iss` and `jti`: together the key of the replay check. */
  readonly sender: string;
  readonly jti: string;
  /** The short name in metrics and logs (`backchannel-logout`, …); an unknown type's URI (logged). */
  readonly event: string;
  readonly revocations: readonly Revocation[];
  /** Set when nothing is to be done: the token is acknowledged and ignored. */
  readonly ignored?: 'event_unknown' | 'subject_unknown';
}

export type EventVerifier = (token: string) => Promise<ReceivedEvent>;

/** One sender: its keys, and jose's options for its tokens (`audience`, `typ`, `maxTokenAge`…). */
export interface Sender extends JWTVerifyOptions {
  readonly issuer: string;
  readonly keys: KeySet;
  readonly clockTolerance: number;
}

/** No sender needs more: a logout token is a few hundred bytes, a SET rarely over 2 KiB. */
const MAX_EVENT_TOKEN_BYTES = 8192;

const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

type Claims = Record<string, unknown>;

export function isObject(value: unknown): value is Claims {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A subject, session or address as a string of 1 to 1024 characters; anything else is ignored. */
export function subjectString(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 && value.length <= 1024 ? value : undefined;
}

/**
 * What both kinds must be: a JWS by the sender's keys meeting its options (jose checks), a `jti`
 * of 1 to 256 characters (replay-checked by the receiver), an `iat` not in the future and an
 * `events` object. Resolves with the claims; what `events` holds is for the caller to check.
 */
export async function verifyEventToken(
  token: string,
  { keys, ...options }: Sender,
  now: () => number,
): Promise<{ claims: Claims; jti: string; iat: number; events: Claims }> {
  if (token.length > MAX_EVENT_TOKEN_BYTES)
    throw new ReceiverError(
      'token_malformed',
      `the token is longer than ${MAX_EVENT_TOKEN_BYTES} bytes`,
    );
  let claims: Claims;
  try {
    ({ payload: claims } = await jwtVerify<Claims>(token, (header) => keys.getKey(header), {
      ...options,
      requiredClaims: ['iat', 'jti'],
      currentDate: new Date(now()),
    }));
  } catch (error) {
    const { code, message } = toVerifyError(error);
    throw new ReceiverError(code, message);
  }
  const { jti, iat, events } = claims;
  if (typeof jti !== 'string' || jti.length === 0 || jti.length > 256)
    throw new ReceiverError('claim_invalid', '"jti" claim must be a string of 1 to 256 characters');
  // jose checks a future `iat` only together with `maxTokenAge`, which SETs do not have.
  if (typeof iat !== 'number' || iat > now() / 1000 + options.clockTolerance)
    throw new ReceiverError('claim_invalid', '"iat" claim is in the future');
  if (!isObject(events))
    throw new ReceiverError('events_invalid', '"events" claim must be a JSON object');
  return { claims, jti, iat, events };
}

/**
 * OIDC Back-Channel Logout 1.0 §2.6: a logout token is verified like an ID token (signature by
 * the issuer's keys and algorithms, `iss`, `aud` one of the issuer's `logoutAudiences`, `iat`
 * within `logoutTokenMaxAge`, `exp` when present, `typ: logout+jwt` when the header has a `typ`),
 * MUST carry `sub` or `sid` and the back-channel-logout member in `events`, MUST NOT carry
 * `nonce`. It revokes every token of that subject and/or session issued before its `iat`.
 * Undefined when no issuer lists logout audiences.
 */
export function createLogoutTokenVerifier(
  config: Pick<VerifierConfig, 'issuers' | 'revocation'>,
  keySets: ReadonlyMap<string, KeySet>,
  now: () => number,
): EventVerifier | undefined {
  const senders = new Map<string, Sender>();
  for (const issuer of config.issuers.values()) {
    const keys = keySets.get(issuer.issuer);
    if (issuer.type !== 'jwt' || issuer.logoutAudiences.length === 0 || keys === undefined)
      continue;
    senders.set(issuer.issuer, {
      issuer: issuer.issuer,
      keys,
      audience: [...issuer.logoutAudiences],
      algorithms: [...issuer.algorithms],
      typ: 'logout+jwt',
      clockTolerance: issuer.clockTolerance,
      maxTokenAge: config.revocation.logoutTokenMaxAge,
    });
  }
  if (senders.size === 0) return undefined;

  return async function verifyLogoutToken(token) {
    // The unverified `iss` only picks the sender; everything is verified afterwards.
    let iss: unknown;
    let typ: unknown;
    try {
      iss = decodeJwt(token).iss;
      typ = decodeProtectedHeader(token).typ;
    } catch {
      throw new ReceiverError('token_malformed', 'the token is not a JWT');
    }
    const sender = typeof iss === 'string' ? senders.get(iss) : undefined;
    if (sender === undefined)
      throw new ReceiverError(
        'issuer_unknown',
        '"iss" is not an issuer whose logout tokens are accepted',
      );
    // BCL §2.4 only recommends explicit typing: a header without `typ` is accepted.
    const rules = typ === undefined ? { ...sender, typ: undefined } : sender;
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
    const at = Math.min(iat + 1, now() / 1000 + sender.clockTolerance);
    const revocations: Revocation[] = [];
    if (sub !== undefined) revocations.push({ kind: 'sub', iss: sender.issuer, value: sub, at });
    if (sid !== undefined) revocations.push({ kind: 'sid', iss: sender.issuer, value: sid, at });
    return { sender: sender.issuer, jti, event: 'backchannel-logout', revocations };
  };
}

// The pushed tokens, verified with our key sets as access tokens are (the signature by node:crypto,
// the claims by jose's rules): logout tokens (OIDC Back-Channel Logout 1.0 §2.4–2.6) and Security
// Event Tokens (RFC 8417, SSF 1.0 SET profile). Each becomes a ReceivedEvent: the `jti` the
// receiver remembers and the watermarks it writes.
import type { CryptoKey } from 'jose';
import type { Clock } from '../clock.js';
import type { VerifierConfig } from '../config/model.js';
import {
  signatureSchemes,
  verificationKey,
  verifySignature,
  type SignatureScheme,
} from '../token/jws-signature.js';
import {
  checkClaims,
  checkProtectedHeader,
  decodeClaims,
  readProtectedHeader,
  type DecodedClaims,
} from '../token/jwt-claims.js';
import { toVerifyError } from '../token/jwt-verifier.js';
import type { KeySet } from '../token/key-set.js';
import { hasCanonicalSignature } from '../token/token-shape.js';
import { pairKeys } from './pair-keys.js';
import { ReceiverError, type RefusalReason } from './receiver-error.js';
import type { Revocation } from './watermarks.js';

/** A verified logout token or SET: what the receiver remembers and what it writes. */
export interface ReceivedEvent {
  /** The verified `iss` and `jti`: together the key of the replay check. */
  readonly sender: string;
  readonly jti: string;
  /** The short name in metrics and logs (`backchannel-logout`, …); an unknown type's URI (logged). */
  readonly event: string;
  readonly revocations: readonly Revocation[];
  /**
   * Set when nothing is to be done: the token is acknowledged and ignored. `sid_unmatched`: a
   * logout naming only a session, of an issuer whose access tokens carry no `sid` (its watermark
   * is written all the same, and matches nothing).
   */
  readonly ignored?: 'event_unknown' | 'subject_unknown' | 'sid_unmatched';
}

/** A verified token, or why it was refused. */
export type Verified = ReceivedEvent | ReceiverError;

/**
 * Verifies one pushed token. `spend(key)` is asked only when a signature under a sender's known
 * key (`key`: its `iss` and `kid`) did not verify: false refuses the push as `rate_limited` (the
 * key's budget of failures is spent). A token whose signature verifies never asks it. Answers at
 * once, without a promise, unless the key set must be asked (a first sight of a key, a refetch).
 */
export type EventVerifier = (
  token: string,
  spend?: (key: string) => boolean,
) => Verified | Promise<Verified>;

type Claims = Record<string, unknown>;

const refusal = (reason: RefusalReason, message: string) => new ReceiverError(reason, message);

function refuse(reason: RefusalReason, message: string): never {
  throw refusal(reason, message);
}

/** One sender: its keys and algorithms, and jose's claim options (`issuer`, `audience`, `typ`…). */
interface Sender {
  readonly issuer: string;
  /** One `aud` this receiver accepts (a logout's audiences, or an SSF receiver's one). */
  readonly audience: string | readonly string[];
  /** Seconds an `iat` may lie in the past. */
  readonly maxTokenAge?: number;
  /** The `typ` the header must carry (media type compared as jose compares it). */
  readonly typ?: string;
  readonly keys: KeySet;
  readonly schemes: ReadonlyMap<string, SignatureScheme>;
  /** Its access tokens carry the session's `sid` (Keycloak), so a `sid`-only logout matches. */
  readonly sessionIds?: boolean;
  readonly clockTolerance: number;
  /**
   * BCL 1.0 §2.4 only recommends explicit typing, and IdPs built on its drafts send `typ: JWT`
   * (Glewlwyd): `typ` is checked only when the header has another one. Such a token still has to
   * be a logout token: the back-channel-logout event and no `nonce` (checked by its reader) tell
   * it from an access or ID token of the same issuer.
   */
  readonly typOptional?: boolean;
}

/** No sender needs more: a logout token is a few hundred bytes, a SET rarely over 2 KiB. */
const MAX_EVENT_TOKEN_BYTES = 8192;

const BACKCHANNEL_LOGOUT = 'http://schemas.openid.net/event/backchannel-logout';
const CAEP = 'https://schemas.openid.net/secevent/caep/event-type/';
const RISC = 'https://schemas.openid.net/secevent/risc/event-type/';
const VERIFICATION = 'https://schemas.openid.net/secevent/ssf/event-type/verification';

/**
 * The SET event types acted on; metrics and logs name an event by its URI's last segment. A
 * compromised credential, revoked sessions or tokens end the subject's tokens like a logout.
 */
const REVOKING_EVENTS: ReadonlySet<string> = new Set([
  ...['session-revoked', 'credential-change'].map((name) => `${CAEP}${name}`),
  ...[
    'account-disabled',
    'account-purged',
    'credential-compromise',
    'sessions-revoked',
    'tokens-revoked',
  ].map((name) => `${RISC}${name}`),
]);

/** The generic `typ` of RFC 7519 §5.1 (`JWT`, any case, `application/` prefix allowed). */
const isPlainJwt = (typ: unknown) =>
  typeof typ === 'string' && /^(?:application\/)?jwt$/i.test(typ);

/** A media type as jose compares `typ` (RFC 7515 §4.1.9: `application/` may be left out). */
const mediaType = (typ: string) => typ.toLowerCase().replace(/^application\//, '');

const isObject = (value: unknown): value is Claims =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** A subject, session or address as a string of 1 to 1024 characters; anything else is ignored. */
const subjectString = (value: unknown): string | undefined =>
  typeof value === 'string' && value.length > 0 && value.length <= 1024 ? value : undefined;

/**
 * What both kinds must be: a JWS by the keys of the sender its `iss` names, meeting that sender's
 * options (jose's claim checks), a `jti` of 1 to 256 characters (replay-checked by the receiver),
 * an `iat` not in the future and an `events` object; `read` says what that token asks of us.
 *
 * Junk is refused in order of cost, each step before any signature work: the size, the compact
 * shape and a canonical signature spelling, a sender whose tokens are accepted, its `typ`, an
 * allowed `alg` and `crit`, a key the sender's set holds for the `kid` (an unknown one refetches
 * at most once per cooldown). Only then is the signature checked, once, with node:crypto.
 *
 * Up to the signature, refusals are returned, not thrown, and the fixed ones are built once: V8
 * counts a function's calls towards optimising it only when it returns, so checks that a flood of
 * junk always left by `throw` stayed interpreted (and each throw computed a source location).
 * After the signature held (a real sender), the claim checks throw as jose's do.
 */
function createEventVerifier(
  senders: ReadonlyMap<string, Sender>,
  now: Clock,
  read: (
    verified: { claims: Claims; iat: number; events: Claims },
    sender: Sender,
  ) => Pick<ReceivedEvent, 'event' | 'revocations' | 'ignored'>,
): EventVerifier {
  const tooLong = refusal(
    'token_malformed',
    `the token is longer than ${MAX_EVENT_TOKEN_BYTES} bytes`,
  );
  const notJwt = refusal('token_malformed', 'the token is not a JWT');
  const notCanonical = refusal('token_malformed', 'the signature is not canonical base64url');
  const issuerUnknown = refusal(
    'issuer_unknown',
    '"iss" is not a sender whose tokens are accepted',
  );
  const algNotAllowed = refusal(
    'alg_not_allowed',
    'the token uses an unsupported algorithm or key',
  );
  const overBudget = refusal(
    'rate_limited',
    'over the budget of failed signature checks for this key',
  );
  const signatureInvalid = refusal('signature_invalid', 'signature verification failed');
  /**
   * The budget's key of each (sender, `kid`), built once (pair-keys.ts). Only `kid`s of keys the
   * sender's set held reach it, so it stays as small as the sets.
   */
  const budgetKeyOf = pairKeys((sender: Sender, kid: string) => `${sender.issuer}\n${kid}`);
  const keyUnknown = new Map(
    [...senders.values()].map((sender) => [
      sender,
      refusal('key_unknown', `no key of "${sender.issuer}" matches the token's "kid"`),
    ]),
  );

  /** The checks after the key: the signature, once, then the claims and what the token asks. */
  function verifyWithKey(
    token: string,
    header: Readonly<Record<string, unknown>>,
    decoded: DecodedClaims,
    sender: Sender,
    expectedTyp: string | undefined,
    cryptoKey: CryptoKey,
    spend: ((key: string) => boolean) | undefined,
  ): Verified {
    const { schemes, issuer, audience, clockTolerance, maxTokenAge } = sender;
    const scheme = schemes.get(header.alg as string)!;
    const key = verificationKey(cryptoKey, scheme);
    if (key === undefined) return algNotAllowed;
    if (!verifySignature(token, scheme, key)) {
      // A forgery under a real key: past the key's budget, the cheap 429 (receiver.ts).
      if (spend === undefined) return signatureInvalid;
      const kid = typeof header.kid === 'string' ? header.kid : '';
      return spend(budgetKeyOf(sender, kid)) ? signatureInvalid : overBudget;
    }
    try {
      const claims: Claims = checkClaims(
        decoded,
        header,
        {
          issuer,
          audience,
          clockTolerance,
          maxTokenAge,
          typ: expectedTyp,
          requiredClaims: ['iat', 'jti'],
        },
        now(),
      );
      const { jti, iat, events } = claims;
      if (typeof jti !== 'string' || jti.length === 0 || jti.length > 256)
        refuse('claim_invalid', '"jti" claim must be a string of 1 to 256 characters');
      // jose checks a future `iat` only together with `maxTokenAge`, which SETs do not have.
      if (typeof iat !== 'number' || iat > now() + clockTolerance)
        refuse('claim_invalid', '"iat" claim is in the future');
      if (!isObject(events)) refuse('events_invalid', '"events" claim must be a JSON object');
      return { sender: issuer, jti, ...read({ claims, iat, events }, sender) };
    } catch (error) {
      return asRefusal(error);
    }
  }

  return function verifyEventToken(token, spend) {
    if (token.length > MAX_EVENT_TOKEN_BYTES) return tooLong;
    const header = readProtectedHeader(token);
    if (header === undefined) return notJwt;
    if (!hasCanonicalSignature(token)) return notCanonical;
    // The unverified `iss` only picks the sender; everything is verified afterwards, the claims
    // from this one decoding.
    const decoded = decodeClaims(token);
    if (decoded === undefined) return notJwt;
    const { iss } = decoded.claims;
    const sender = typeof iss === 'string' ? senders.get(iss) : undefined;
    if (sender === undefined) return issuerUnknown;
    const { keys, schemes } = sender;
    const { typ } = header;
    const expectedTyp =
      sender.typOptional && (typ === undefined || isPlainJwt(typ)) ? undefined : sender.typ;
    if (
      expectedTyp !== undefined &&
      (typeof typ !== 'string' || mediaType(typ) !== mediaType(expectedTyp))
    )
      return refusal('typ_mismatch', `"typ" (JWT Type) Header Parameter must be "${expectedTyp}"`);
    try {
      checkProtectedHeader(header, schemes);
    } catch (error) {
      return asRefusal(error);
    }
    // A key already held, or a `kid` refused with no fetch to wait for: no promise either way.
    const held = keys.knownKey?.(header);
    if (held !== undefined)
      return verifyWithKey(token, header, decoded, sender, expectedTyp, held, spend);
    if (keys.refusesAtOnce?.(header) === true) return keyUnknown.get(sender)!;
    return keys
      .getKey(header)
      .then(
        (key) => verifyWithKey(token, header, decoded, sender, expectedTyp, key, spend),
        asRefusal,
      );
  };
}

/** A ReceiverError as is; jose's and the verifier's errors as the refusal of their code. */
function asRefusal(error: unknown): ReceiverError {
  if (error instanceof ReceiverError) return error;
  const { code, message } = toVerifyError(error);
  return new ReceiverError(code, message);
}

/**
 * OIDC Back-Channel Logout 1.0 §2.6: verified like an ID token (the issuer's keys and algorithms,
 * `aud` one of its `logoutAudiences`, `iat` within `logoutTokenMaxAge`, `exp` if present: the BCL
 * drafts had none, so its age is bounded by `iat` alone; `typ` `logout+jwt`, `JWT` or none), with
 * `sub` or `sid`, the back-channel-logout event and no `nonce`; revokes that subject's and/or
 * session's tokens issued before its `iat`. Undefined when no issuer lists logout audiences.
 */
export function createLogoutTokenVerifier(
  config: Pick<VerifierConfig, 'issuers' | 'revocation'>,
  keySets: ReadonlyMap<string, KeySet>,
  now: Clock,
): EventVerifier | undefined {
  const senders = new Map<string, Sender>();
  for (const issuer of config.issuers.values()) {
    const keys = keySets.get(issuer.issuer);
    if (issuer.type !== 'jwt' || issuer.logoutAudiences.length === 0 || keys === undefined)
      continue;
    senders.set(issuer.issuer, {
      issuer: issuer.issuer,
      keys,
      sessionIds: issuer.preset === 'keycloak',
      audience: [...issuer.logoutAudiences],
      schemes: signatureSchemes(issuer.algorithms),
      typ: 'logout+jwt',
      typOptional: true,
      clockTolerance: issuer.clockTolerance,
      maxTokenAge: config.revocation.logoutTokenMaxAge,
    });
  }
  if (senders.size === 0) return undefined;

  return createEventVerifier(senders, now, ({ claims, iat, events }, sender) => {
    if (!isObject(events[BACKCHANNEL_LOGOUT]))
      refuse('events_invalid', `"events" has no "${BACKCHANNEL_LOGOUT}" object`);
    if ('nonce' in claims) refuse('nonce_present', 'a logout token must not carry "nonce"');
    // The IdP's own clock dated the logout and dates its tokens. A token issued in the logout's
    // second counts as older (whole-second `iat`s cannot tell them apart).
    const at = Math.min(iat + 1, now() + sender.clockTolerance);
    // One watermark per logout: the user's (`sub`) already refuses every token of the session
    // (`sid`) as well, so the session's is written only when the token names no user (its entry
    // would double what each logout costs the view).
    const sub = subjectString(claims.sub);
    const sid = subjectString(claims.sid);
    const kind = sub !== undefined ? 'sub' : 'sid';
    const value = sub ?? sid;
    if (value === undefined) refuse('subject_missing', 'a logout token must carry "sub" or "sid"');
    const revocations = [{ kind, iss: sender.issuer, value, at }] as const;
    const unmatched = !sender.sessionIds && kind === 'sid';
    return {
      event: 'backchannel-logout',
      revocations,
      ...(unmatched && { ignored: 'sid_unmatched' }),
    };
  });
}

/** Leeway for a SET's `iat` and `event_timestamp` against our clock and each other. */
export const SET_CLOCK_TOLERANCE = 30;

/**
 * The SSF 1.0 SET profile: `typ: secevent+jwt`, no JWT `sub` nor `exp`, `iss` the transmitter
 * (its ssf-configuration's keys), `aud` this receiver, exactly one event, `iat` at most `maxAge`
 * old (`revocation.setMaxAge`; polled SETs wait at the transmitter), an `event_timestamp` not
 * later than `iat`. REVOKING_EVENTS revoke the subject's tokens issued before the event; the
 * verification event, an unknown type or subject are acknowledged and ignored. An `email` subject
 * names tokens of `emailIssuer` only (undefined: ignored).
 */
export function createSetVerifier(
  transmitter: string,
  audience: string,
  keys: KeySet,
  now: Clock,
  limits: { readonly maxAge: number; readonly emailIssuer: string | undefined },
): EventVerifier {
  const sender: Sender = {
    issuer: transmitter,
    keys,
    audience,
    // The SSF interoperability profile signs with RS256; the other asymmetric ones are fine.
    schemes: signatureSchemes(['RS256', 'PS256', 'ES256', 'EdDSA']),
    typ: 'secevent+jwt',
    clockTolerance: SET_CLOCK_TOLERANCE,
    maxTokenAge: limits.maxAge,
  };
  return createEventVerifier(new Map([[transmitter, sender]]), now, ({ claims, iat, events }) => {
    if ('sub' in claims)
      refuse('sub_present', 'a SET must not carry "sub" (the subject is in "sub_id")');
    if ('exp' in claims) refuse('exp_present', 'a SET must not carry "exp"');
    const types = Object.entries(events);
    if (types.length !== 1)
      refuse('events_invalid', `"events" must hold exactly one event, not ${types.length}`);
    const [type, event] = types[0]!;
    if (!isObject(event)) refuse('events_invalid', 'the event must be a JSON object');
    const name = type.slice(type.lastIndexOf('/') + 1);
    if (type === VERIFICATION) return { event: name, revocations: [] };
    if (!REVOKING_EVENTS.has(type))
      return { event: type.slice(0, 200), revocations: [], ignored: 'event_unknown' };
    // SSF 1.0 puts the subject in `sub_id`; earlier drafts (and CAEP 1.0 examples) in the event.
    const stamp = event.event_timestamp;
    const when = typeof stamp === 'number' && Number.isFinite(stamp) ? stamp : iat;
    // A later event would re-revoke tokens issued after the SET on every replay within its age.
    if (when > iat + SET_CLOCK_TOLERANCE)
      refuse('claim_invalid', '"event_timestamp" is later than the SET\'s "iat"');
    const subject = readSubject(claims.sub_id ?? event.subject, limits.emailIssuer);
    if (subject === undefined) return { event: name, revocations: [], ignored: 'subject_unknown' };
    // Whole-second `iat`s: a token of the event's second counts as older. Never ahead of now, so
    // a transmitter cannot revoke tokens that do not exist yet.
    return { event: name, revocations: [{ ...subject, at: Math.min(when + 1, now()) }] };
  });
}

/**
 * RFC 9493 subjects: `iss_sub`, `email` (of `emailIssuer`'s tokens, matched only against their
 * `email` claim with `email_verified: true`: an address alone names no issuer), `complex` whose
 * `user` is one of those; `opaque` only names a stream.
 */
function readSubject(
  value: unknown,
  emailIssuer: string | undefined,
  nested = false,
): Omit<Revocation, 'at'> | undefined {
  if (!isObject(value)) return undefined;
  if (value.format === 'complex')
    return nested ? undefined : readSubject(value.user, emailIssuer, true);
  const [iss, sub, email] = [value.iss, value.sub, value.email].map(subjectString);
  if (value.format === 'iss_sub' && iss && sub) return { kind: 'sub', iss, value: sub };
  if (value.format === 'email' && email && emailIssuer !== undefined)
    return { kind: 'email', iss: emailIssuer, value: email.toLowerCase() };
  return undefined;
}

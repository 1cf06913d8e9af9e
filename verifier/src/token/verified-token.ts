// What a successful token check yields, whatever its type (what the decision cache keeps), and
// the checks of its other claims: audience, access-token kind, key binding, session.
import type { EpochSeconds } from '../clock.js';
import type { JwtIssuer } from '../config/model.js';
import { VerifyError } from '../errors.js';
import type { Identity } from './identity.js';

export interface VerifiedToken {
  readonly identity: Identity;
  /** The cache never keeps the token past it. */
  readonly exp: EpochSeconds;
  /** Tolerance already applied; undefined when the token has no `nbf`. */
  readonly nbf?: EpochSeconds | undefined;
  /** The JWS `kid` the token was verified with, so entries can be dropped when the key leaves. */
  readonly kid?: string | undefined;
  /** Until when the key that verified it is trusted; undefined: no key. */
  readonly keyTrustedUntil?: EpochSeconds | undefined;
  /** `cnf.jkt` of a DPoP-bound token (RFC 9449 §6): the thumbprint its proofs must be signed with. */
  readonly jkt?: string | undefined;
  readonly session?: SessionClaims | undefined;
  /** How the user signed in; read only when a policy has step-up requirements. */
  readonly authentication?: Authentication | undefined;
}

/** RFC 9470 §6's claims of a token (or introspection answer), as decision/step-up.ts checks them. */
export interface Authentication {
  /** The authentication context classes met: `acr`, or every one of Entra's `acrs`. */
  readonly acr: readonly string[];
  /** The authentication methods (`amr`, RFC 8176). */
  readonly amr: readonly string[];
  /** When the user signed in, in epoch seconds; undefined when absent or not a number. */
  readonly authTime: number | undefined;
  /** The issuer's clock tolerance in seconds, which `maxAge` allows for. */
  readonly tolerance: number;
}

/** Where an issuer's tokens carry each claim (undefined: they do not; presets.ts). */
export interface AuthenticationClaims {
  readonly acrClaim?: string | undefined;
  readonly amrClaim?: string | undefined;
  readonly authTimeClaim?: string | undefined;
}

/** A string or an array's strings, each short: anything else in the claim counts as nothing. */
const words = (value: unknown): readonly string[] =>
  (Array.isArray(value) ? value : [value]).filter(
    (item): item is string => typeof item === 'string' && item.length > 0 && item.length <= 256,
  );

/** The step-up claims named by `names`; what is missing or of another type reads as none. */
export function readAuthentication(
  claims: Readonly<Record<string, unknown>>,
  names: AuthenticationClaims,
  tolerance: number,
): Authentication {
  const { acrClaim, amrClaim, authTimeClaim } = names;
  const time = authTimeClaim === undefined ? undefined : claims[authTimeClaim];
  return {
    acr: acrClaim === undefined ? [] : words(claims[acrClaim]),
    amr: amrClaim === undefined ? [] : words(claims[amrClaim]),
    authTime: typeof time === 'number' && Number.isFinite(time) ? time : undefined,
    tolerance,
  };
}

/** A non-empty string of at most 1 KiB, else undefined (module-level: no closure per token). */
const short = (value: unknown): string | undefined =>
  typeof value === 'string' && value.length > 0 && value.length <= 1024 ? value : undefined;

/**
 * What pushed revocations match besides iss and sub, odd types ignored: `iat` (without one a
 * token is never newer than a watermark), the OIDC `sid` (Keycloak has it), `email` lower-cased
 * and only with `email_verified: true` (an unverified address may be anyone's).
 */
export function readSessionClaims({ iat, sid, email, email_verified }: Record<string, unknown>) {
  return {
    iat: typeof iat === 'number' && Number.isFinite(iat) ? iat : undefined,
    sid: short(sid),
    email: email_verified === true ? short(email)?.toLowerCase() : undefined,
  };
}
export type SessionClaims = Readonly<ReturnType<typeof readSessionClaims>>;

/**
 * `cnf.jkt` of a JWT (RFC 9449 §6.1) or an introspection answer (§6.2), undefined when unbound. A
 * `cnf` this gate cannot honour refuses the token: as a bearer token it would lose its binding.
 */
export function readJkt(cnf: unknown, where = 'claim'): string | undefined {
  if (cnf === undefined) return undefined;
  const jkt = cnf !== null && typeof cnf === 'object' ? (cnf as { jkt?: unknown }).jkt : undefined;
  if (!Array.isArray(cnf) && typeof jkt === 'string' && /^[A-Za-z0-9_-]{43}$/.test(jkt)) return jkt;
  throw new VerifyError(
    'claim_invalid',
    `"cnf" ${where} is not a DPoP key binding this gate understands`,
  );
}

/** `value` (a string or an array: `aud`, Cognito's `client_id`) must contain `audience`. */
export function checkAudience(value: unknown, audience: string, what: string): void {
  if (!(Array.isArray(value) ? value : [value]).includes(audience))
    throw new VerifyError('audience_mismatch', `${what} does not contain the configured audience`);
}

const wrong = (message: string) => new VerifyError('claim_invalid', message);

/**
 * Refuses a verified token that is not one of the issuer's access tokens: a required claim
 * missing or different, or a refused claim present (RFC 8725 §3.11, token confusion).
 */
export function checkTokenKind(
  claims: Readonly<Record<string, unknown>>,
  rules: Pick<JwtIssuer, 'requireClaims' | 'refuseClaims'>,
): void {
  // Index loops: a `for…of` here left an iterator result per claim on the new-token path.
  const { requireClaims, refuseClaims } = rules;
  for (let i = 0; i < requireClaims.length; i++) {
    const { claim, value } = requireClaims[i]!;
    const found = claims[claim];
    if (found === undefined)
      throw wrong(`"${claim}" claim is missing: not an access token of this issuer`);
    // A claim given as an object or an array never matches a `claim=value` rule.
    const scalar =
      typeof found === 'string' || typeof found === 'number' || typeof found === 'boolean';
    if (value !== undefined && !(scalar && String(found) === value))
      throw wrong(`"${claim}" claim is not "${value}": not an access token of this issuer`);
  }
  for (let i = 0; i < refuseClaims.length; i++) {
    const refused = refuseClaims[i]!;
    if (claims[refused] !== undefined)
      throw wrong(`"${refused}" claim is present: not an access token`);
  }
}

// Who a verified token speaks for, reduced to what NGINX needs, and made safe to put in a header.
import type { JwtIssuer } from '../config/model.js';
import { VerifyError } from '../errors.js';
import { createInterner } from '../intern.js';

export interface Identity {
  readonly sub: string;
  readonly client: string;
  readonly scopes: readonly string[];
  readonly issuer: string;
}

/** Header values stay short: NGINX and uWS cap header sizes, and these only select a secret set. */
const MAX_ID_LENGTH = 256;
const MAX_SCOPE_LENGTH = 1024;

/**
 * A client id that reaches NGINX byte for byte, as it picks the secret set (refused, never
 * rewritten): visible ASCII at both ends (NGINX trims spaces and tabs), printable inside, ≤ 256.
 */
const HEADER_EXACT_CLIENT = /^[\x21-\x7e](?:[\x20-\x7e]{0,254}[\x21-\x7e])?$/;

/**
 * Who a verified token or introspection answer speaks for: the client id is the first string among
 * `clientClaims` (azp, client_id, cid…); the scopes the first of `scopeClaims` (default `scope`,
 * then `scp`) present: a space-separated string or an array (Okta's `scp`, Entra's `roles`).
 */
export function readIdentity(
  claims: Record<string, unknown>,
  issuer: Pick<JwtIssuer, 'issuer' | 'clientClaims'> & Partial<Pick<JwtIssuer, 'scopeClaims'>>,
): Identity {
  let name: string | undefined;
  let client = '';
  const { clientClaims } = issuer;
  // Index loops here and in readScopes: a `for…of` left an iterator result per name, per token.
  for (let i = 0; i < clientClaims.length; i++) {
    const claim = clientClaims[i]!;
    const value = claims[claim];
    if (typeof value === 'string' && value.length > 0) {
      name = claim;
      client = value;
      break;
    }
  }
  if (name !== undefined && !HEADER_EXACT_CLIENT.test(client))
    throw new VerifyError(
      'client_id_invalid',
      `"${name}" claim cannot be passed on unchanged (surrounding spaces, non-printable or non-ASCII characters, or over ${MAX_ID_LENGTH} characters)`,
    );
  // A token of an issuer that names clients but names none here would get the `default` set
  // as if it were some known client: refused instead.
  if (name === undefined && issuer.clientClaims.length > 0)
    throw new VerifyError(
      'client_unknown',
      `no client claim (${issuer.clientClaims.map((claim) => `"${claim}"`).join(', ')}) in the token`,
    );
  return {
    sub: typeof claims.sub === 'string' ? claims.sub : '',
    client,
    scopes: readScopes(claims, issuer.scopeClaims ?? ['scope', 'scp']),
    issuer: issuer.issuer,
  };
}

/**
 * The scope lists of `scope` strings, one frozen array per spelling: an issuer's tokens carry a
 * handful, so a new token splits none, and the decision cache shares the list by reference.
 * Bounded in count and length (at most ~200 KB held); a longer string is split every time.
 */
const scopeLists = createInterner<readonly string[]>(256);
const SHARED_SCOPE_LENGTH = 512;

/** A `scope` string's words, without the empty ones (doubled or edge spaces). */
function splitScope(value: string): readonly string[] {
  const words = value.split(' ');
  return Object.freeze(words.includes('') ? words.filter((s) => s.length > 0) : words);
}

function readScopes(claims: Record<string, unknown>, names: readonly string[]): readonly string[] {
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!;
    const value = claims[name];
    if (typeof value === 'string')
      return value.length <= SHARED_SCOPE_LENGTH
        ? scopeLists(value, () => splitScope(value))
        : splitScope(value);
    // RFC 9068 §2.2.3 / RFC 8693 §4.2: `scope` is a string; an array there grants nothing.
    if (Array.isArray(value) && name !== 'scope')
      return value.filter((s): s is string => typeof s === 'string' && s.length > 0);
  }
  return [];
}

/** Printable ASCII unchanged, else percent-encoded: no header line or byte NGINX would reject. */
export function headerSafe(value: string, max = MAX_ID_LENGTH): string {
  const safe = /^[\x20-\x7e]*$/.test(value) ? value : encodeURIComponent(value);
  return safe.length <= max ? safe : safe.slice(0, max);
}

/** Scopes joined by spaces, cut at a whole scope so a truncated value never names a wrong scope. */
export function scopeHeader(scopes: readonly string[]): string {
  let out = '';
  for (const scope of scopes) {
    const safe = headerSafe(scope, MAX_SCOPE_LENGTH);
    const next = out.length === 0 ? safe : `${out} ${safe}`;
    if (next.length > MAX_SCOPE_LENGTH) break;
    out = next;
  }
  return out;
}

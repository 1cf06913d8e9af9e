// The transport edge: a Decision rendered as the answer of /verify (the contract in
// docs/architecture.md). The only place status codes, identity headers and RFC 6750 challenges
// are built; both transports write what this returns verbatim.
import type { CloudFrontCookieGrant } from '../cloudfront/gate-decorator.js';
import type { Decision } from '../decision/decision.js';
import { dpopChallengeHeaders } from '../dpop/challenge.js';
import { statusFor } from '../errors.js';
import { headerSafe, scopeHeader } from '../token/identity.js';
import { createInterner } from '../intern.js';
import { secretSetName } from '../decision/secret-set.js';

export const REALM = 'secret-gate';

export type Header = readonly [name: string, value: string];

export interface VerifyAnswer {
  readonly status: 204 | 401 | 403;
  readonly headers: readonly Header[];
}

// Header pairs for values many tokens share (client, scopes, issuer, challenges) are built once.
const sharedPair = createInterner<Header>(10_000);

const NO_TOKEN: VerifyAnswer = {
  status: 401,
  headers: [
    ['WWW-Authenticate', `Bearer realm="${REALM}"`],
    ['X-Accel-Expires', '0'],
  ],
};
const INVALID_TOKEN: VerifyAnswer = {
  status: 401,
  headers: [
    ['WWW-Authenticate', `Bearer realm="${REALM}", error="invalid_token"`],
    ['X-Accel-Expires', '0'],
  ],
};
// A client id NGINX would have to alter (trim, cut, encode) to carry it; RFC 6750 has no code for
// "valid token, unusable client", so it is an invalid_token with a description that names it.
const CLIENT_ID_INVALID: VerifyAnswer = {
  status: 401,
  headers: [
    [
      'WWW-Authenticate',
      `Bearer realm="${REALM}", error="invalid_token", error_description="client_id_invalid"`,
    ],
    ['X-Accel-Expires', '0'],
  ],
};

const CLIENT_UNKNOWN: VerifyAnswer = { status: 403, headers: [['X-Accel-Expires', '0']] };

/**
 * 204 carries the identity headers (and any grant's); 401 carries `WWW-Authenticate` with
 * `error="invalid_token"` only when a token was sent (RFC 6750 §3.1); 403 carries
 * `X-Auth-Challenge`, which NGINX copies into `WWW-Authenticate` (NGINX passes
 * `WWW-Authenticate` from an auth subrequest only on 401).
 */
export function renderDecision(decision: Decision): VerifyAnswer {
  if (decision.outcome === 'allow') return { status: 204, headers: allowHeaders(decision) };
  const status = statusFor(decision.reason);
  if (decision.reason === 'client_id_invalid') return CLIENT_ID_INVALID;
  // RFC 9449 §7.1: a DPoP request (or a DPoP-only policy) is answered with a DPoP challenge.
  if (status === 401 && decision.dpop !== undefined)
    return { status, headers: dpopChallengeHeaders(decision.reason, decision.dpop) };
  if (status === 401) return decision.reason === 'token_missing' ? NO_TOKEN : INVALID_TOKEN;
  // No client, no secret set: more scopes would not help, so no `insufficient_scope` challenge.
  if (decision.reason === 'client_unknown') return CLIENT_UNKNOWN;
  const scope =
    decision.requiredScopes.length > 0
      ? `, scope="${scopeHeader(decision.requiredScopes).replace(/"/g, '')}"`
      : '';
  return {
    status,
    headers: [
      sharedPair(`x ${scope}`, () => [
        'X-Auth-Challenge',
        `Bearer realm="${REALM}", error="insufficient_scope"${scope}`,
      ]),
      edgeExpires(decision),
    ],
  };
}

/**
 * `X-Accel-Expires`: how many seconds NGINX's decision cache may answer for this one. Always sent,
 * so 0 ("do not store") is explicit on every answer NGINX must not reuse.
 */
function edgeExpires(decision: Decision): Header {
  return ACCEL_EXPIRES[decision.edgeTtl ?? 0] ?? ['X-Accel-Expires', String(decision.edgeTtl)];
}
const ACCEL_EXPIRES: readonly Header[] = Array.from(
  { length: 301 },
  (_, seconds) => ['X-Accel-Expires', String(seconds)] as const,
);

/**
 * An allow is short on purpose: NGINX stores it in its edge cache and parses every header again
 * on each hit. `X-Auth-Set` names the secret set (secret-set.ts), `X-Auth-Client` is for the
 * access log; both are built once per (issuer, client) and shared by every decision that has it.
 */
function allowHeaders(decision: Decision): Header[] {
  const { identity, grants, dpop } = decision;
  const headers: Header[] = [edgeExpires(decision)];
  if (identity !== undefined && identity.client !== '') {
    const key = `${identity.issuer}\n${identity.client}`;
    headers.push(
      sharedPair(`c ${key}`, () => ['X-Auth-Client', headerSafe(identity.client)]),
      sharedPair(`n ${key}`, () => [
        'X-Auth-Set',
        secretSetName(identity.issuer, identity.client) as string,
      ]),
    );
  }
  for (const grant of grants) headers.push(...cloudFrontHeaders(grant));
  if (dpop?.nonce !== undefined) headers.push(['DPoP-Nonce', dpop.nonce]);
  return headers;
}

/**
 * The CloudFront grant as complete `Set-Cookie` values, one header per cookie, which NGINX adds
 * to the allowed /secret answer as they are (`add_header Set-Cookie`). Built here, where every
 * part was produced or checked (CloudFront's base64 alphabet, the configured domain, a path of
 * URL characters), so NGINX needs no code to assemble or check them.
 */
export function cloudFrontHeaders(grant: CloudFrontCookieGrant): Header[] {
  const attributes =
    `; Secure; HttpOnly; SameSite=Lax; Path=${grant.path}` +
    (grant.cookieDomain === undefined ? '' : `; Domain=${grant.cookieDomain}`) +
    `; Expires=${new Date(grant.expires * 1000).toUTCString()}`;
  return [
    ['X-Auth-CF-Policy', `CloudFront-Policy=${grant.policy}${attributes}`],
    ['X-Auth-CF-Signature', `CloudFront-Signature=${grant.signature}${attributes}`],
    ['X-Auth-CF-Key-Pair-Id', `CloudFront-Key-Pair-Id=${grant.keyPairId}${attributes}`],
    ...(grant.sha256
      ? [['X-Auth-CF-Hash-Algorithm', `CloudFront-Hash-Algorithm=SHA256${attributes}`] as const]
      : []),
  ];
}

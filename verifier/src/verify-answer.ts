// The transport edge: a Decision rendered as the answer of /verify (the contract in
// docs/architecture.md). The only place status codes, identity headers and RFC 6750 challenges
// are built; both transports write what this returns verbatim.
import type { CloudFrontCookieGrant } from './cloudfront/gate-decorator.js';
import type { Decision } from './decision.js';
import { dpopChallengeHeaders } from './dpop/challenge.js';
import { statusFor } from './errors.js';
import { headerSafe, scopeHeader } from './identity.js';
import { createInterner } from './intern.js';

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

function allowHeaders(decision: Decision): Header[] {
  const { identity, grants, dpop } = decision;
  const headers: Header[] = [edgeExpires(decision)];
  if (identity !== undefined) {
    const scope = scopeHeader(identity.scopes);
    headers.push(
      ['X-Auth-Sub', headerSafe(identity.sub)],
      sharedPair(`c ${identity.client}`, () => ['X-Auth-Client', headerSafe(identity.client)]),
      sharedPair(`s ${scope}`, () => ['X-Auth-Scope', scope]),
      sharedPair(`i ${identity.issuer}`, () => ['X-Auth-Issuer', headerSafe(identity.issuer)]),
    );
  }
  for (const grant of grants) headers.push(...cloudFrontHeaders(grant));
  if (dpop?.nonce !== undefined) headers.push(['DPoP-Nonce', dpop.nonce]);
  return headers;
}

/** The `X-Auth-CF-*` headers NGINX turns into the three CloudFront Set-Cookie lines. */
export function cloudFrontHeaders(grant: CloudFrontCookieGrant): Header[] {
  return [
    ['X-Auth-CF-Policy', grant.policy],
    ['X-Auth-CF-Signature', grant.signature],
    ['X-Auth-CF-Expires', String(grant.expires)],
    ['X-Auth-CF-Key-Pair-Id', grant.keyPairId],
    ['X-Auth-CF-Path', grant.path],
    ...(grant.sha256 ? [['X-Auth-CF-Hash-Algorithm', 'SHA256'] as const] : []),
    ...(grant.cookieDomain === undefined
      ? []
      : [['X-Auth-CF-Domain', grant.cookieDomain] as const]),
  ];
}

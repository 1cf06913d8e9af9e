// The /verify contract between NGINX and the verifier, declared once: the request headers the
// transport reads, the answer headers verify-answer.ts writes. docs/architecture.md's tables are
// generated from these rows and from the plugins' own (cloudfront/gate-decorator.ts,
// dpop/challenge.ts) by `npm run docs:config`; a test fails when they drift.
import type { VerifyRequest } from '../decision/authorize.js';

/** One header of the contract and what it means. */
export interface ContractHeader {
  readonly name: string;
  /** Which answers carry it (`204`, `401`, …); for a request header, when NGINX sends it. */
  readonly on: string;
  readonly meaning: string;
}

/** A row of the contract; call-limit.ts writes its own two with it. */
export function row(name: string, on: string, meaning: string): ContractHeader {
  return { name, on, meaning };
}

/** A request header, the VerifyRequest field it fills and its `key` in lower case (uWS's lookup). */
const request = (name: string, field: keyof VerifyRequest, on: string, meaning: string) =>
  ({ ...row(name, on, meaning), field, key: name.toLowerCase() }) as const;

/** What NGINX sends to `GET /verify`, and only this (`proxy_pass_request_headers off`). */
export const REQUEST_HEADERS = [
  request(
    'X-SG-Policy',
    'policy',
    'always',
    'the policy name (`default` when absent); its only carrier, so the URL NGINX proxies to stays fixed',
  ),
  request(
    'Authorization',
    'authorization',
    'always',
    "the client's `Bearer` (or `DPoP`) token; `Bearer !too-long`, refused as malformed, in place of one of 3,800 characters or more (uWebSockets.js cannot read headers over 4 KiB)",
  ),
  request(
    'X-Original-URI',
    'originalUri',
    'always',
    'the path only (a query string may carry a token); logged shortened, checked against a DPoP `htu`',
  ),
  request('X-Original-Method', 'originalMethod', 'always', "the client's method, for a DPoP `htm`"),
  request(
    'DPoP',
    'dpop',
    'DPoP locations',
    'exactly one proof (RFC 9449) of at most 2 KiB, else a marker the verifier refuses',
  ),
  request(
    'X-Original-Origin',
    'originalOrigin',
    'DPoP locations',
    "`SG_EXTERNAL_ORIGIN`, never the client's `Host`: the origin a proof's `htu` must name",
  ),
] as const;

/** The headers of the core's answers; a plugin's own rows come from the plugin. */
export const ANSWER_HEADERS: readonly ContractHeader[] = [
  row(
    'X-Accel-Expires',
    'every answer',
    "seconds NGINX's edge cache may reuse the answer (0: never): a verified token's outcome only, never past its `exp` or its key set's trust, at most `VERIFIER_EDGE_CACHE_TTL`",
  ),
  row('X-Auth-Client', '204', "the client id, for NGINX's access log; absent without a client id"),
  row(
    'X-Auth-Set',
    '204',
    'the secret set NGINX serves: `c` + 32 hex digits of SHA-256(issuer LF client id), so sets are picked by issuer and client; absent without a client id (the `default` set)',
  ),
  row(
    'WWW-Authenticate',
    '401',
    '`Bearer realm="secret-gate"`, with `error="invalid_token"` when a token was sent (RFC 6750 §3.1) and `error_description="client_id_invalid"` for a client id no header can carry unchanged; NGINX passes it on',
  ),
  row(
    'X-Auth-Challenge',
    '403',
    '`Bearer realm="secret-gate", error="insufficient_scope", scope="…"`, which NGINX copies into `WWW-Authenticate` (auth_request passes that header only on a 401); absent on a 403 `client_unknown` (a token naming no client: more scopes would not help)',
  ),
];

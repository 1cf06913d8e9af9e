// The /verify contract between NGINX and the verifier, declared once: the request headers the
// transports read, and the answer headers verify-answer.ts writes. docs/architecture.md's tables are
// generated from these rows (`npm run docs:config`; a test fails when they drift). Plugins declare
// the headers they render themselves (cloudfront/gate-decorator.ts, dpop/challenge.ts) in rows of
// the same shape.
import type { VerifyRequest } from '../decision/authorize.js';

/** One header of the contract and what it means. */
export interface ContractHeader {
  readonly name: string;
  /** Which answers carry it (`204`, `401`, …); for a request header, when NGINX sends it. */
  readonly on: string;
  readonly meaning: string;
}

/** A request header and the VerifyRequest field it fills. */
export interface RequestHeader extends ContractHeader {
  readonly field: keyof VerifyRequest;
  /** Lower case, as both HTTP libraries look headers up. */
  readonly key: string;
}

const request = (
  name: string,
  field: RequestHeader['field'],
  on: string,
  meaning: string,
): RequestHeader => ({ name, field, key: name.toLowerCase(), on, meaning });

/** What NGINX sends to `GET /verify`, and only this (`proxy_pass_request_headers off`). */
export const REQUEST_HEADERS: readonly RequestHeader[] = [
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
];

/** The headers of the core's answers; a plugin's own rows come from the plugin. */
export const ANSWER_HEADERS: readonly ContractHeader[] = [
  {
    name: 'X-Accel-Expires',
    on: 'every answer',
    meaning:
      "seconds NGINX's edge cache may reuse the answer (0: never): a verified token's outcome only, never past its `exp` or its key set's trust, at most `VERIFIER_EDGE_CACHE_TTL`",
  },
  {
    name: 'X-Auth-Client',
    on: '204',
    meaning: "the client id, for NGINX's access log; absent without a client id",
  },
  {
    name: 'X-Auth-Set',
    on: '204',
    meaning:
      'the secret set NGINX serves: `c` + 32 hex digits of SHA-256(issuer LF client id), so sets are picked by issuer and client; absent without a client id (the `default` set)',
  },
  {
    name: 'WWW-Authenticate',
    on: '401',
    meaning:
      '`Bearer realm="secret-gate"`, with `error="invalid_token"` when a token was sent (RFC 6750 §3.1) and `error_description="client_id_invalid"` for a client id no header can carry unchanged; NGINX passes it on',
  },
  {
    name: 'X-Auth-Challenge',
    on: '403',
    meaning:
      '`Bearer realm="secret-gate", error="insufficient_scope", scope="…"`, which NGINX copies into `WWW-Authenticate` (auth_request passes that header only on a 401); absent on a 403 `client_unknown` (a token naming no client: more scopes would not help)',
  },
];

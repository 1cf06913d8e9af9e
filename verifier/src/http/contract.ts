// The /verify contract between NGINX and the verifier, declared once: the request headers the
// transport reads, the answer headers verify-answer.ts and call-limit.ts write. The tables of
// docs/architecture.md are generated from these rows and the plugins' own (cloudfront/, dpop/) by
// `npm run docs:config`; a test fails when they drift.
import type { VerifyRequest } from '../decision/decision.js';

/** A header and its meaning; `on`: which answers carry it (`204`, …), or when NGINX sends it. */
const row = (name: string, on: string, meaning: string) => ({ name, on, meaning });

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
    "the client's `Bearer` (or `DPoP`) token as sent, whatever its length (NGINX's header buffer, 24 KiB, is the bound); over 16 KiB the verifier answers 401 `token_too_large` before parsing it",
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
  request(
    'traceparent',
    'traceparent',
    '`SG_TRACE_CONTEXT=on`',
    "NGINX's W3C trace context (the client's trace continued, or one NGINX started; NGINX's span id; NGINX's sampled flag): the decision log's `trace_id` and the parent of the verifier's span; a malformed one is ignored",
  ),
] as const;

/** The headers of the core's answers; a plugin's own rows come from the plugin. */
export const ANSWER_HEADERS = [
  row(
    'X-Accel-Expires',
    'every answer',
    "seconds NGINX's edge cache may reuse the answer (0: never): a verified token's outcome only, never past its `exp` or its key set's trust, at most `VERIFIER_EDGE_CACHE_TTL`",
  ),
  row('X-Auth-Client', '204', "the client id, for NGINX's access log; absent without a client id"),
  row(
    'X-Auth-Set',
    '204',
    "the secret set NGINX serves: `c` + 32 hex digits of SHA-256(issuer LF client id), so sets are picked by issuer and client; absent without a client id (the `default` set). For a policy with `mint`: the set's name (`default` without a client id), a space and the caller's minted values as one JSON object (`minted/grant.ts`), which NGINX merges into the set",
  ),
  row(
    'WWW-Authenticate',
    '401',
    '`Bearer realm="secret-gate"`, with `error="invalid_token"` when a token was sent (RFC 6750 §3.1) and `error_description="client_id_invalid"` for a client id no header can carry unchanged or `error_description="token_too_large"` for a token over 16 KiB; or `error="insufficient_user_authentication", error_description="…"` with the policy\'s `acr_values="…"` and/or `max_age="…"` (RFC 9470 §3, never stored at the edge); every challenge ends in `resource_metadata="…"` (RFC 9728 §5.1) when `VERIFIER_RESOURCE_METADATA_URL` is set; NGINX passes it on',
  ),
  row(
    'X-Auth-Reason',
    '401, 403',
    "the refusal's reason code (`token_expired`, `scope_insufficient`, …), for NGINX's access log (`reason`, `SG_TRACE_CONTEXT=on`); never a token or a claim",
  ),
  row(
    'X-Auth-Challenge',
    '403',
    '`Bearer realm="secret-gate", error="insufficient_scope", scope="…"` (and `resource_metadata`), which NGINX copies into `WWW-Authenticate` (auth_request passes that header only on a 401); absent on a 403 `client_unknown` or `client_not_allowed` (a token naming no client, or one the policy does not serve: more scopes would not help)',
  ),
];

// The per-client call limit's rows (call-limit.ts): what it counts, how it refuses.
export const CLIENT_KEY_HEADER = row(
  'X-SG-Client',
  'always',
  "the client key (the address after `real_ip`, an IPv6 client by its /64) the per-client call limit counts (`VERIFIER_VERIFY_RATE`); never part of a decision or of the edge cache's key",
);
export const LIMITED_HEADER = row(
  'X-Auth-Challenge',
  '403 (limited)',
  '`limited`: the per-client call limit refused before any token work; no `X-Accel-Expires`, so never stored at the edge; NGINX answers the client 429 + `Retry-After`',
);
// NGINX's key (edge-key.ts), checked before the call limit when VERIFIER_EDGE_KEY_FILE is set.
export const EDGE_KEY_HEADER = row(
  'X-SG-Edge-Key',
  'always (and to the receivers) with `SG_EDGE_KEY_FILE`',
  'the key of `SG_EDGE_KEY_FILE`, proving the call came through NGINX; with `VERIFIER_EDGE_KEY_FILE` set, a call without it is answered 401 before the call limit counts it or any token work, so no other caller names a client key',
);

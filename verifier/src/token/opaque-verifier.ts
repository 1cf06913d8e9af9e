// Opaque (non-JWT) access tokens, checked by asking the issuer — the original study's model done
// right (docs/study.md): anything but a clear positive answer is a 401, including timeouts and
// non-200 statuses.
//
// introspection: RFC 7662 §2; the verifier authenticates with client_secret_basic and requires
//   `active: true`, an `aud` that contains this API's audience (an authorization server answers
//   `active: true` for every live token it issued, for any API), and a `token_type` that names an
//   access token when present (a refresh token is active too: RFC 6749 §1.5). `exp`, `nbf` and
//   `iss` in the answer are honoured. A DPoP-bound token (RFC 9449 §6.2) carries `cnf.jkt` in the
//   answer, read as from a JWT: its proofs are checked on every request and it never works as a
//   bearer token; a `token_type` of `DPoP` without a usable `cnf.jkt` is refused.
// userinfo: OIDC Core §5.3; the token is valid exactly when the endpoint answers 200 with a JSON
//   object. User-info grants no scopes, so policies that require scopes answer 403 for it, and its
//   claims describe the user, so the client id is never read from them.
// tokeninfo: a vendor's own endpoint (Google), in tokeninfo.ts.
import type { IntrospectionIssuer, TokeninfoIssuer, UserinfoIssuer } from '../config/model.js';
import { readJkt } from './confirmation.js';
import { createEndpointResolver } from './discovery.js';
import { VerifyError } from '../errors.js';
import { FetchError, fetchJson } from '../fetch-json.js';
import { readIdentity } from './identity.js';
import { createTokeninfoChecker } from './tokeninfo.js';
import type { VerifiedToken } from './verified-token.js';

export type OpaqueVerifier = (token: string) => Promise<VerifiedToken>;

export function createOpaqueVerifier(
  config: IntrospectionIssuer | UserinfoIssuer | TokeninfoIssuer,
  now: () => number,
): OpaqueVerifier {
  switch (config.type) {
    case 'introspection':
      return createIntrospector(config, now);
    case 'userinfo':
      return createUserinfoChecker(config, now);
    case 'tokeninfo':
      return createTokeninfoChecker(config, now);
  }
}

function createIntrospector(config: IntrospectionIssuer, now: () => number): OpaqueVerifier {
  const endpoint = createEndpointResolver(
    config.issuer,
    config.endpoint,
    'introspection_endpoint',
    config.timeout,
    config.allowHttp,
  );
  // RFC 7662 §2.1 + RFC 6749 §2.3.1: form-encode the credentials before base64.
  const basic = Buffer.from(
    `${encodeURIComponent(config.clientId)}:${encodeURIComponent(config.clientSecret)}`,
  ).toString('base64');

  return async function introspect(token) {
    const answer = await ask(endpoint, (url) =>
      fetchJson(url, {
        timeout: config.timeout,
        allowHttp: config.allowHttp,
        method: 'POST',
        headers: {
          authorization: `Basic ${basic}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ token, token_type_hint: 'access_token' }).toString(),
      }),
    );
    if (answer.active !== true)
      throw new VerifyError('token_inactive', 'introspection says the token is not active');
    const seconds = now() / 1000;
    if (answer.iss !== undefined && answer.iss !== config.issuer) {
      throw new VerifyError('issuer_unknown', '"iss" in the introspection answer does not match');
    }
    checkTokenType(answer);
    const jkt = readBinding(answer);
    const aud = answer.aud;
    const audiences = Array.isArray(aud) ? aud : [aud];
    if (!audiences.includes(config.audience)) {
      throw new VerifyError(
        'audience_mismatch',
        '"aud" in the introspection answer does not contain the audience',
      );
    }
    const exp = typeof answer.exp === 'number' ? answer.exp : Infinity;
    if (exp <= seconds)
      throw new VerifyError('token_expired', '"exp" in the introspection answer has passed');
    const nbf = typeof answer.nbf === 'number' ? answer.nbf : undefined;
    if (nbf !== undefined && nbf > seconds)
      throw new VerifyError('token_not_yet_valid', '"nbf" is in the future');
    return {
      identity: readIdentity(answer, config),
      exp: Math.min(exp, seconds + config.cacheTtl),
      nbf,
      kid: undefined,
      jkt,
    };
  };
}

function createUserinfoChecker(config: UserinfoIssuer, now: () => number): OpaqueVerifier {
  const endpoint = createEndpointResolver(
    config.issuer,
    config.endpoint,
    'userinfo_endpoint',
    config.timeout,
    config.allowHttp,
  );
  // No client claims: whatever `azp` or `client_id` a user-info answer holds speaks for the user.
  const source = { issuer: config.issuer, clientClaims: [] };
  return async function checkUserinfo(token) {
    const answer = await ask(endpoint, (url) =>
      fetchJson(url, {
        timeout: config.timeout,
        allowHttp: config.allowHttp,
        headers: { authorization: `Bearer ${token}` },
      }),
    );
    return {
      identity: readIdentity(answer, source, []),
      exp: now() / 1000 + config.cacheTtl,
      nbf: undefined,
      kid: undefined,
    };
  };
}

/**
 * `token_type` values that name an access token: RFC 6749 §7.1 types (`Bearer`, RFC 9449's `DPoP`)
 * and the RFC 8693 / RFC 7662 hint spellings. Anything else (`refresh_token`, Keycloak's
 * `Refresh`, an ID token) is refused. Absent is accepted: RFC 7662 makes the member optional.
 */
const ACCESS_TOKEN_TYPES = new Set([
  'bearer',
  'dpop',
  'access_token',
  'urn:ietf:params:oauth:token-type:access_token',
]);

function checkTokenType(answer: Record<string, unknown>): void {
  const type = answer.token_type;
  if (type === undefined) return;
  if (typeof type !== 'string' || !ACCESS_TOKEN_TYPES.has(type.toLowerCase()))
    throw new VerifyError(
      'token_inactive',
      '"token_type" in the introspection answer is not an access token',
    );
}

/**
 * The answer's `cnf.jkt` (RFC 9449 §6.2), undefined for a bearer token. The server says the token
 * is DPoP-bound either way it can (`cnf`, or `token_type: DPoP`); a binding the gate cannot
 * check is refused rather than dropped.
 */
function readBinding(answer: Record<string, unknown>): string | undefined {
  const jkt = readJkt(answer.cnf, 'in the introspection answer');
  if (
    jkt === undefined &&
    typeof answer.token_type === 'string' &&
    answer.token_type.toLowerCase() === 'dpop'
  )
    throw new VerifyError(
      'claim_invalid',
      '"token_type" in the introspection answer is DPoP but it has no "cnf.jkt"',
    );
  return jkt;
}

/** One request to the issuer; every failure becomes a 401-class VerifyError. */
export async function ask(
  endpoint: () => Promise<string>,
  send: (url: string) => ReturnType<typeof fetchJson>,
): Promise<Record<string, unknown>> {
  let result: Awaited<ReturnType<typeof fetchJson>>;
  try {
    result = await send(await endpoint());
  } catch (error) {
    const reason = error instanceof FetchError ? error.message : 'request failed';
    throw new VerifyError('introspection_failed', `issuer could not confirm the token: ${reason}`);
  }
  if (result.status === 401 || result.status === 403) {
    // A user-info 401 means the token is bad; an introspection 401 means our credentials are. Both deny.
    throw new VerifyError('token_inactive', `issuer answered ${result.status}`);
  }
  if (
    result.status !== 200 ||
    typeof result.body !== 'object' ||
    result.body === null ||
    Array.isArray(result.body)
  ) {
    throw new VerifyError(
      'introspection_failed',
      `issuer answered ${result.status} without a JSON object`,
    );
  }
  return result.body as Record<string, unknown>;
}

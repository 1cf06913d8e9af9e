// Opaque (non-JWT) access tokens, checked by asking the issuer — the original study's model done
// right (docs/study.md): anything but a clear positive answer is a 401, including timeouts and
// non-200 statuses. An answer is cached no longer than `cacheTtl` nor past the token's own `exp`.
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
// tokeninfo: a vendor's own endpoint (Google's `ya29.` tokens: not JWTs, not RFC 7662). Google
//   answers 200 for a live token of *any* app, so the answer's `aud` must be the configured client
//   id; `azp`/`aud` name the client and `scope` the scopes. The token is POSTed as the form field
//   `access_token` (as google-auth-library's getTokenInfo does), so it never sits in a URL that an
//   error message or a proxy log could quote.
import type { IntrospectionIssuer, TokeninfoIssuer, UserinfoIssuer } from '../config/model.js';
import { checkTokenKind } from '../config/presets.js';
import { VerifyError } from '../errors.js';
import { FetchError, fetchJson, type FetchedJson, type FetchJsonOptions } from '../fetch-json.js';
import { readJkt } from './confirmation.js';
import { createEndpointResolver } from './discovery.js';
import { readIdentity } from './identity.js';
import type { VerifiedToken } from './verified-token.js';

export type OpaqueVerifier = (token: string) => Promise<VerifiedToken>;

type OpaqueIssuer = IntrospectionIssuer | UserinfoIssuer | TokeninfoIssuer;
type Answer = Record<string, unknown>;

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

export function createOpaqueVerifier(config: OpaqueIssuer, now: () => number): OpaqueVerifier {
  switch (config.type) {
    case 'introspection':
      return createIntrospector(config, now);
    case 'userinfo':
      return createUserinfoChecker(config, now);
    case 'tokeninfo':
      return createTokeninfoChecker(config, now);
  }
}

/** The issuer's endpoint: configured, or read from its discovery document under `member`. */
function endpointOf(
  config: IntrospectionIssuer | UserinfoIssuer,
  member: 'introspection_endpoint' | 'userinfo_endpoint',
) {
  return createEndpointResolver(
    config.issuer,
    config.endpoint,
    member,
    config.timeout,
    config.allowHttp,
  );
}

function createIntrospector(config: IntrospectionIssuer, now: () => number): OpaqueVerifier {
  const endpoint = endpointOf(config, 'introspection_endpoint');
  // RFC 7662 §2.1 + RFC 6749 §2.3.1: form-encode the credentials before base64.
  const basic = Buffer.from(
    `${encodeURIComponent(config.clientId)}:${encodeURIComponent(config.clientSecret)}`,
  ).toString('base64');

  return async function introspect(token) {
    const answer = await ask(config, endpoint, {
      method: 'POST',
      headers: { authorization: `Basic ${basic}`, ...FORM },
      body: new URLSearchParams({ token, token_type_hint: 'access_token' }).toString(),
    });
    if (answer.active !== true)
      throw new VerifyError('token_inactive', 'introspection says the token is not active');
    if (answer.iss !== undefined && answer.iss !== config.issuer) {
      throw new VerifyError('issuer_unknown', '"iss" in the introspection answer does not match');
    }
    checkTokenType(answer);
    const jkt = readBinding(answer);
    checkAudience(answer, config.audience, 'introspection');
    const exp = typeof answer.exp === 'number' ? answer.exp : Infinity;
    const nbf = typeof answer.nbf === 'number' ? answer.nbf : undefined;
    return { ...verified(answer, config, now() / 1000, exp, nbf, 'introspection'), jkt };
  };
}

function createUserinfoChecker(config: UserinfoIssuer, now: () => number): OpaqueVerifier {
  const endpoint = endpointOf(config, 'userinfo_endpoint');
  // No client claims: whatever `azp` or `client_id` a user-info answer holds speaks for the user.
  const source = { issuer: config.issuer, clientClaims: [] };
  return async function checkUserinfo(token) {
    const answer = await ask(config, endpoint, { headers: { authorization: `Bearer ${token}` } });
    return {
      identity: readIdentity(answer, source, []),
      exp: now() / 1000 + config.cacheTtl,
      nbf: undefined,
      kid: undefined,
    };
  };
}

function createTokeninfoChecker(config: TokeninfoIssuer, now: () => number): OpaqueVerifier {
  const endpoint = () => Promise.resolve(config.endpoint);
  return async function checkTokeninfo(token) {
    const answer = await ask(config, endpoint, {
      method: 'POST',
      headers: FORM,
      body: new URLSearchParams({ access_token: token }).toString(),
    });
    if (answer.error !== undefined || answer.error_description !== undefined)
      throw new VerifyError('token_inactive', 'tokeninfo says the token is not valid');
    checkAudience(answer, config.audience, 'tokeninfo');
    checkTokenKind(answer, config);
    const seconds = now() / 1000;
    // Google sends `exp` (and `expires_in`) as decimal strings; numbers are taken as well.
    const left = numeric(answer.expires_in);
    const exp = numeric(answer.exp) ?? (left === undefined ? undefined : seconds + left);
    if (exp === undefined)
      throw new VerifyError('claim_invalid', 'the tokeninfo answer has no "exp" or "expires_in"');
    return verified(answer, config, seconds, exp, undefined, 'tokeninfo');
  };
}

function numeric(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  return typeof value === 'string' && /^\d{1,12}$/.test(value) ? Number(value) : undefined;
}

/** `aud` (a string or an array) must contain the configured audience. */
function checkAudience(answer: Answer, audience: string, where: string): void {
  const audiences = Array.isArray(answer.aud) ? (answer.aud as unknown[]) : [answer.aud];
  if (!audiences.includes(audience))
    throw new VerifyError(
      'audience_mismatch',
      `"aud" in the ${where} answer does not contain the configured audience`,
    );
}

/** The answer's identity, refused outside `nbf`..`exp`; cached for at most `cacheTtl`. */
function verified(
  answer: Answer,
  config: IntrospectionIssuer | TokeninfoIssuer,
  seconds: number,
  exp: number,
  nbf: number | undefined,
  where: string,
): VerifiedToken {
  if (exp <= seconds)
    throw new VerifyError('token_expired', `"exp" in the ${where} answer has passed`);
  if (nbf !== undefined && nbf > seconds)
    throw new VerifyError('token_not_yet_valid', '"nbf" is in the future');
  return {
    identity: readIdentity(answer, config),
    exp: Math.min(exp, seconds + config.cacheTtl),
    nbf,
    kid: undefined,
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

function checkTokenType(answer: Answer): void {
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
function readBinding(answer: Answer): string | undefined {
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
async function ask(
  config: OpaqueIssuer,
  endpoint: () => Promise<string>,
  request: Omit<FetchJsonOptions, 'timeout' | 'allowHttp'>,
): Promise<Answer> {
  let result: FetchedJson;
  try {
    const url = await endpoint();
    result = await fetchJson(url, {
      ...request,
      timeout: config.timeout,
      allowHttp: config.allowHttp,
    });
  } catch (error) {
    const reason = error instanceof FetchError ? error.message : 'request failed';
    throw new VerifyError('introspection_failed', `issuer could not confirm the token: ${reason}`);
  }
  if (result.status === 401 || result.status === 403) {
    // A user-info 401 means the token is bad; an introspection 401 means our credentials are. Both deny.
    throw new VerifyError('token_inactive', `issuer answered ${result.status}`);
  }
  const { body } = result;
  if (result.status !== 200 || typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new VerifyError(
      'introspection_failed',
      `issuer answered ${result.status} without a JSON object`,
    );
  }
  return body as Answer;
}

// Opaque (non-JWT) access tokens, checked by asking their issuer: the study's model done right
// (docs/study.md). Anything but a clear positive answer is a 401, timeouts and non-200 included.
import type { IntrospectionIssuer, TokeninfoIssuer, UserinfoIssuer } from '../config/model.js';
import { checkTokenKind } from '../config/presets.js';
import { VerifyError } from '../errors.js';
import { FetchError, fetchJson, type FetchedJson, type FetchJsonOptions } from '../fetch-json.js';
import { createEndpointResolver } from './discovery.js';
import { readIdentity } from './identity.js';
import { readJkt, type VerifiedToken } from './verified-token.js';

export type OpaqueVerifier = (token: string) => Promise<VerifiedToken>;

type OpaqueIssuer = IntrospectionIssuer | UserinfoIssuer | TokeninfoIssuer;
type Answer = Record<string, unknown>;
type Request = Omit<FetchJsonOptions, 'timeout' | 'allowHttp'>;

/** How one kind of issuer is asked, and what its positive answer must hold. */
interface Check {
  readonly request: (token: string) => Request;
  /** The answer's own rules; then its window (`exp` undefined: unbounded) and key binding. */
  readonly read: (answer: Answer, seconds: number) => { exp?: number; nbf?: number; jkt?: string };
}

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const USERINFO: Check = {
  request: (token) => ({ headers: { authorization: `Bearer ${token}` } }),
  read: () => ({}),
};

/**
 * Every positive answer is refused outside its `nbf`..`exp` and cached for at most `cacheTtl`.
 * `introspection` (RFC 7662 §2): client_secret_basic; `active: true`; `aud` contains this API's
 * audience (a server answers `active: true` for every live token it issued, for any API); a
 * `token_type` that names an access token when present (a refresh token is active too: RFC 6749
 * §1.5); `iss` when present. A DPoP-bound token (RFC 9449 §6.2) carries `cnf.jkt`, read as from a
 * JWT, so its proofs are checked on every request and it never works as a bearer token.
 * `userinfo` (OIDC Core §5.3): valid exactly when the endpoint answers 200 with a JSON object; it
 * grants no scopes (a policy that requires some answers 403), and its claims describe the user, so
 * no client id is read from them. `tokeninfo`: a vendor's endpoint (Google's `ya29.` tokens: not
 * JWTs, not RFC 7662) that answers 200 for a live token of any app, so `aud` must be the configured
 * client id; `azp`/`aud` name the client and `scope` the scopes. The token is POSTed as the form
 * field `access_token` (as google-auth-library's getTokenInfo does), never put in a URL that an
 * error message or a proxy log could quote.
 */
export function createOpaqueVerifier(config: OpaqueIssuer, now: () => number): OpaqueVerifier {
  const endpoint =
    config.type === 'tokeninfo'
      ? () => Promise.resolve(config.endpoint)
      : createEndpointResolver(config, config.endpoint, `${config.type}_endpoint`);
  const check =
    config.type === 'introspection'
      ? introspection(config)
      : config.type === 'userinfo'
        ? USERINFO
        : tokeninfo(config);

  return async function verifyOpaque(token) {
    const answer = await ask(config, endpoint, check.request(token));
    const seconds = now() / 1000;
    const { exp = Infinity, nbf, jkt } = check.read(answer, seconds);
    if (exp <= seconds)
      throw new VerifyError('token_expired', `"exp" in the ${config.type} answer has passed`);
    if (nbf !== undefined && nbf > seconds)
      throw new VerifyError('token_not_yet_valid', '"nbf" is in the future');
    // No client claims: whatever `azp` or `client_id` a user-info answer holds speaks for the user.
    const identity =
      config.type === 'userinfo'
        ? readIdentity(answer, { issuer: config.issuer, clientClaims: [] }, [])
        : readIdentity(answer, config);
    return { identity, exp: Math.min(exp, seconds + config.cacheTtl), nbf, jkt };
  };
}

function introspection(config: IntrospectionIssuer): Check {
  // RFC 7662 §2.1 + RFC 6749 §2.3.1: form-encode the credentials before base64.
  const basic = Buffer.from(
    `${encodeURIComponent(config.clientId)}:${encodeURIComponent(config.clientSecret)}`,
  ).toString('base64');
  return {
    request: (token) => ({
      method: 'POST',
      headers: { authorization: `Basic ${basic}`, ...FORM },
      body: new URLSearchParams({ token, token_type_hint: 'access_token' }).toString(),
    }),
    read(answer) {
      if (answer.active !== true)
        throw new VerifyError('token_inactive', 'introspection says the token is not active');
      if (answer.iss !== undefined && answer.iss !== config.issuer)
        throw new VerifyError('issuer_unknown', '"iss" in the introspection answer does not match');
      const jkt = readBinding(answer);
      checkAudience(answer, config.audience, 'introspection');
      const { exp, nbf } = answer;
      return {
        exp: typeof exp === 'number' ? exp : undefined,
        nbf: typeof nbf === 'number' ? nbf : undefined,
        jkt,
      };
    },
  };
}

function tokeninfo(config: TokeninfoIssuer): Check {
  return {
    request: (token) => ({
      method: 'POST',
      headers: FORM,
      body: new URLSearchParams({ access_token: token }).toString(),
    }),
    read(answer, seconds) {
      if (answer.error !== undefined || answer.error_description !== undefined)
        throw new VerifyError('token_inactive', 'tokeninfo says the token is not valid');
      checkAudience(answer, config.audience, 'tokeninfo');
      checkTokenKind(answer, config);
      // Google sends `exp` (and `expires_in`) as decimal strings; numbers are taken as well.
      const left = numeric(answer.expires_in);
      const exp = numeric(answer.exp) ?? (left === undefined ? undefined : seconds + left);
      if (exp === undefined)
        throw new VerifyError('claim_invalid', 'the tokeninfo answer has no "exp" or "expires_in"');
      return { exp };
    },
  };
}

function numeric(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  return typeof value === 'string' && /^\d{1,12}$/.test(value) ? Number(value) : undefined;
}

/** `aud` (a string or an array) must contain the configured audience. */
function checkAudience(answer: Answer, audience: string, where: string): void {
  if (!(Array.isArray(answer.aud) ? answer.aud : [answer.aud]).includes(audience))
    throw new VerifyError(
      'audience_mismatch',
      `"aud" in the ${where} answer does not contain the configured audience`,
    );
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

/**
 * The answer's `token_type` checked, and its `cnf.jkt` (RFC 9449 §6.2), undefined for a bearer
 * token. The server says the token is DPoP-bound either way it can (`cnf`, or `token_type: DPoP`);
 * a binding the gate cannot check is refused rather than dropped.
 */
function readBinding(answer: Answer): string | undefined {
  const type = answer.token_type;
  if (
    type !== undefined &&
    (typeof type !== 'string' || !ACCESS_TOKEN_TYPES.has(type.toLowerCase()))
  )
    throw new VerifyError(
      'token_inactive',
      '"token_type" in the introspection answer is not an access token',
    );
  const jkt = readJkt(answer.cnf, 'in the introspection answer');
  if (jkt === undefined && typeof type === 'string' && type.toLowerCase() === 'dpop')
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
  request: Request,
): Promise<Answer> {
  let result: FetchedJson;
  try {
    const { timeout, allowHttp } = config;
    result = await fetchJson(await endpoint(), { ...request, timeout, allowHttp });
  } catch (error) {
    const reason = error instanceof FetchError ? error.message : 'request failed';
    throw new VerifyError('introspection_failed', `issuer could not confirm the token: ${reason}`);
  }
  const { status, body } = result;
  // A user-info 401 means the token is bad; an introspection 401 means our credentials are. Both deny.
  if (status === 401 || status === 403)
    throw new VerifyError('token_inactive', `issuer answered ${status}`);
  if (status !== 200 || typeof body !== 'object' || body === null || Array.isArray(body))
    throw new VerifyError(
      'introspection_failed',
      `issuer answered ${status} without a JSON object`,
    );
  return body as Answer;
}

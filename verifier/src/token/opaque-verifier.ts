// Opaque (non-JWT) access tokens, checked by asking their issuer: the study's model done right
// (docs/study.md). Anything but a clear positive answer is a 401, timeouts and non-200 included.
import type { Clock } from '../clock.js';
import type { IntrospectionIssuer, TokeninfoIssuer } from '../config/model.js';
import { VerifyError } from '../errors.js';
import { FetchError, fetchJson, type FetchedJson, type FetchJsonOptions } from '../fetch-json.js';
import { carryLogTrace } from '../tracing/log-trace.js';
import { createEndpointResolver } from './discovery.js';
import { readIdentity } from './identity.js';
import {
  checkAudience,
  checkTokenKind,
  readAuthentication,
  readJkt,
  type VerifiedToken,
} from './verified-token.js';

export type OpaqueVerifier = (token: string) => Promise<VerifiedToken>;

type Answer = Record<string, unknown>;
/** An answer's time window (`exp` undefined: unbounded) and key binding. */
type Window = { exp?: number | undefined; nbf?: number | undefined; jkt?: string | undefined };

/**
 * A positive answer is refused outside its `nbf`..`exp`, cached at most `cacheTtl`. `introspection`
 * (RFC 7662 §2): client_secret_basic; `active: true`; `aud` contains this API's audience (the
 * server says active for any API); `token_type` an access token when present (a refresh token is
 * active too); `iss` when present; `cnf.jkt` (RFC 9449 §6.2). `tokeninfo` (Google's `ya29.`)
 * answers for a live token of any app, so `aud` must be the client id; the token is POSTed as
 * `access_token` (as google-auth-library does), never put in a URL a log could quote.
 */
export function createOpaqueVerifier(
  config: IntrospectionIssuer | TokeninfoIssuer,
  now: Clock,
  { authentication = false } = {},
): OpaqueVerifier {
  // RFC 9470 §6.2: an introspection answer names them as a JWT would; tokeninfo's per its preset.
  const names = config.type === 'introspection' ? STEP_UP_NAMES : config;
  const { timeout, allowHttp } = config;
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  const endpoint =
    config.type === 'introspection'
      ? createEndpointResolver(config, config.endpoint, 'introspection_endpoint')
      : () => Promise.resolve(config.endpoint);
  if (config.type === 'introspection') {
    // RFC 7662 §2.1 + RFC 6749 §2.3.1: form-encode the credentials before base64.
    const basic = `${encodeURIComponent(config.clientId)}:${encodeURIComponent(config.clientSecret)}`;
    headers.authorization = `Basic ${Buffer.from(basic).toString('base64')}`;
  }

  async function verifyOpaque(token: string): Promise<VerifiedToken> {
    const form: Record<string, string> =
      config.type === 'introspection'
        ? { token, token_type_hint: 'access_token' }
        : { access_token: token };
    const body = new URLSearchParams(form).toString();
    const answer = await ask(endpoint, { method: 'POST', headers, body, timeout, allowHttp });
    const seconds = now();
    const window =
      config.type === 'introspection'
        ? readIntrospection(answer, config)
        : readTokeninfo(answer, config, seconds);
    const { exp = Infinity, nbf, jkt } = window;
    if (exp <= seconds)
      throw new VerifyError('token_expired', `"exp" in the ${config.type} answer has passed`);
    if (nbf !== undefined && nbf > seconds)
      throw new VerifyError('token_not_yet_valid', '"nbf" is in the future');
    const identity = readIdentity(answer, config);
    const authenticated = authentication ? readAuthentication(answer, names, 0) : undefined;
    const until = Math.min(exp, seconds + config.cacheTtl);
    return { identity, exp: until, nbf, jkt, authentication: authenticated };
  }
  // Always a wait for the issuer's answer: the request's trace goes with it (tracing/log-trace.ts).
  return (token) => carryLogTrace(verifyOpaque, token);
}

const STEP_UP_NAMES = { acrClaim: 'acr', amrClaim: 'amr', authTimeClaim: 'auth_time' } as const;

/**
 * `token_type`s of an access token: RFC 6749 §7.1 (`Bearer`, RFC 9449 `DPoP`) and the RFC 8693 /
 * 7662 hint spellings; `refresh_token`, Keycloak's `Refresh`… are refused, absent is accepted.
 */
const ACCESS_TOKEN_TYPES: ReadonlySet<unknown> = new Set([
  'bearer',
  'dpop',
  'access_token',
  'urn:ietf:params:oauth:token-type:access_token',
]);

function readIntrospection(answer: Answer, config: IntrospectionIssuer): Window {
  if (answer.active !== true)
    throw new VerifyError('token_inactive', 'introspection says the token is not active');
  if (answer.iss !== undefined && answer.iss !== config.issuer)
    throw new VerifyError('issuer_unknown', '"iss" in the introspection answer does not match');
  const { token_type: type, exp, nbf } = answer;
  const lower = typeof type === 'string' ? type.toLowerCase() : type;
  if (lower !== undefined && !ACCESS_TOKEN_TYPES.has(lower))
    throw new VerifyError(
      'token_inactive',
      '"token_type" in the introspection answer is not an access token',
    );
  // The server says the token is DPoP-bound either way it can (`cnf`, or `token_type: DPoP`); a
  // binding the gate cannot check is refused rather than dropped.
  const jkt = readJkt(answer.cnf, 'in the introspection answer');
  if (jkt === undefined && lower === 'dpop')
    throw new VerifyError(
      'claim_invalid',
      '"token_type" in the introspection answer is DPoP but it has no "cnf.jkt"',
    );
  checkAudience(answer.aud, config.audience, '"aud" in the introspection answer');
  return {
    exp: typeof exp === 'number' ? exp : undefined,
    nbf: typeof nbf === 'number' ? nbf : undefined,
    jkt,
  };
}

function readTokeninfo(answer: Answer, config: TokeninfoIssuer, seconds: number): Window {
  if (answer.error !== undefined || answer.error_description !== undefined)
    throw new VerifyError('token_inactive', 'tokeninfo says the token is not valid');
  checkAudience(answer.aud, config.audience, '"aud" in the tokeninfo answer');
  checkTokenKind(answer, config);
  // Google sends `exp` (and `expires_in`) as decimal strings; numbers are taken as well.
  const left = numeric(answer.expires_in);
  const exp = numeric(answer.exp) ?? (left === undefined ? undefined : seconds + left);
  if (exp === undefined)
    throw new VerifyError('claim_invalid', 'the tokeninfo answer has no "exp" or "expires_in"');
  return { exp };
}

function numeric(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  return typeof value === 'string' && /^\d{1,12}$/.test(value) ? Number(value) : undefined;
}

/** One request to the issuer; every failure becomes a 401-class VerifyError. */
async function ask(endpoint: () => Promise<string>, request: FetchJsonOptions): Promise<Answer> {
  let result: FetchedJson;
  try {
    result = await fetchJson(await endpoint(), request);
  } catch (error) {
    const reason = error instanceof FetchError ? error.message : 'request failed';
    throw new VerifyError('introspection_failed', `issuer could not confirm the token: ${reason}`);
  }
  const { status, body } = result;
  // A 401 from introspection means our credentials are refused, from tokeninfo the token: deny.
  if (status === 401 || status === 403)
    throw new VerifyError('token_inactive', `issuer answered ${status}`);
  if (status !== 200 || typeof body !== 'object' || body === null || Array.isArray(body))
    throw new VerifyError(
      'introspection_failed',
      `issuer answered ${status} without a JSON object`,
    );
  return body as Answer;
}

// Opaque access tokens only their issuer can read, checked at its tokeninfo endpoint (Google's
// `ya29.` tokens: not JWTs, not RFC 7662). The same path as introspection (opaque-verifier.ts):
// anything but a clear positive answer is a 401, the answer is cached no longer than `cacheTtl`
// nor past the token's own `exp`. Google answers 200 for a live token of *any* app, so the answer's
// `aud` must be the configured client id; `azp`/`aud` name the client and `scope` the scopes.
// The token is POSTed as the form field `access_token` (as google-auth-library's getTokenInfo
// does), so it never sits in a URL that an error message or a proxy log could quote.
import type { TokeninfoIssuer } from '../config/model.js';
import { VerifyError } from '../errors.js';
import { fetchJson } from '../fetch-json.js';
import { readIdentity } from './identity.js';
import { ask, type OpaqueVerifier } from './opaque-verifier.js';
import { checkTokenKind } from '../config/presets.js';

export function createTokeninfoChecker(config: TokeninfoIssuer, now: () => number): OpaqueVerifier {
  const endpoint = () => Promise.resolve(config.endpoint);
  return async function checkTokeninfo(token) {
    const answer = await ask(endpoint, (url) =>
      fetchJson(url, {
        timeout: config.timeout,
        allowHttp: config.allowHttp,
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ access_token: token }).toString(),
      }),
    );
    if (answer.error !== undefined || answer.error_description !== undefined)
      throw new VerifyError('token_inactive', 'tokeninfo says the token is not valid');
    const audiences = Array.isArray(answer.aud) ? (answer.aud as unknown[]) : [answer.aud];
    if (!audiences.includes(config.audience))
      throw new VerifyError(
        'audience_mismatch',
        '"aud" in the tokeninfo answer is not the configured client id',
      );
    checkTokenKind(answer, config);
    const seconds = now() / 1000;
    const exp = expiryOf(answer, seconds);
    if (exp === undefined)
      throw new VerifyError('claim_invalid', 'the tokeninfo answer has no "exp" or "expires_in"');
    if (exp <= seconds)
      throw new VerifyError('token_expired', '"exp" in the tokeninfo answer has passed');
    return {
      identity: readIdentity(answer, config),
      exp: Math.min(exp, seconds + config.cacheTtl),
      nbf: undefined,
      kid: undefined,
    };
  };
}

/** Google sends `exp` (and `expires_in`) as decimal strings; numbers are taken as well. */
function expiryOf(answer: Record<string, unknown>, seconds: number): number | undefined {
  const number = (value: unknown) =>
    typeof value === 'number'
      ? value
      : typeof value === 'string' && /^\d{1,12}$/.test(value)
        ? Number(value)
        : undefined;
  const exp = number(answer.exp);
  if (exp !== undefined) return exp;
  const left = number(answer.expires_in);
  return left === undefined ? undefined : seconds + left;
}

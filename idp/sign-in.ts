// How the dev IdP "signs the user in" at /authorize. It has no login page and keeps no login
// session, so every authorization request is a sign-in made at that moment and the request alone
// decides how strong it is, deterministically:
// - without `acr_values`, or with values it does not offer: a password sign-in,
//   acr `urn:secret-gate:password`, amr ["pwd"] (RFC 8176);
// - with `urn:secret-gate:mfa` among the `acr_values`: the second factor is taken as done,
//   acr `urn:secret-gate:mfa`, amr ["pwd", "otp"].
// `auth_time` is the time of the request, so `max_age` (any value, 0 included) and
// `prompt=login` are always met by a fresh sign-in (OIDC Core §3.1.2.1). A stale `auth_time` for
// tests comes from POST /dev/next-token-claims or /dev/token, as any other claim does.

/** The base level: a password sign-in. The verifier's dev `payments` policy asks for more. */
export const ACR_PASSWORD = 'urn:secret-gate:password';
/** The step-up level: password and a one-time code. */
export const ACR_MFA = 'urn:secret-gate:mfa';
/** What discovery would list as `acr_values_supported`, weakest first. */
export const ACR_VALUES = [ACR_PASSWORD, ACR_MFA] as const;

/** How the user was authenticated: the `acr`, `amr` and `auth_time` of both tokens. */
export interface Authentication {
  readonly acr: string;
  readonly amr: readonly string[];
  /** Epoch seconds. */
  readonly authTime: number;
}

/** The sign-in an /authorize query gets; `nowSeconds` is epoch seconds. */
export function authenticate(query: URLSearchParams, nowSeconds: number): Authentication {
  const requested = (query.get('acr_values') ?? '').split(' ').filter(Boolean);
  const mfa = requested.includes(ACR_MFA);
  return {
    acr: mfa ? ACR_MFA : ACR_PASSWORD,
    amr: mfa ? ['pwd', 'otp'] : ['pwd'],
    authTime: nowSeconds,
  };
}

/** The claims the access token and the ID token carry for a sign-in. */
export function authenticationClaims(authentication: Authentication): Record<string, unknown> {
  return {
    acr: authentication.acr,
    amr: [...authentication.amr],
    auth_time: authentication.authTime,
  };
}

// Issuer presets: one row of settings per identity provider, so `VERIFIER_PRESET=okta` accepts
// its access tokens and refuses its ID tokens. A row is laid under the issuer as written (each
// setting can still be given); its start-time refusals cannot be turned off. Vendor pages cited.
import type { IssuerConfig, JwtIssuer, PolicyConfig, TokeninfoIssuer } from './model.js';

/** ID tokens (`nonce`, `at_hash`), logout tokens and Security Event Tokens (`events`). */
export const ALWAYS_REFUSED = ['nonce', 'at_hash', 'events'] as const;

/** Issuer settings in document form, laid under the issuer's own, and the checks a preset adds. */
interface PresetRow {
  /** `tokeninfo`: opaque tokens checked at the IdP's tokeninfo endpoint (opaque-verifier.ts). */
  readonly type?: 'tokeninfo';
  readonly [setting: string]: unknown;
  /** At start: the issuer URL's path must match `pattern`, else `reason`. */
  readonly issuerPath?: { readonly pattern: RegExp; readonly reason: string };
  /** At start: `audience` may not be one of these (`origin`: the issuer's origin), and why. */
  readonly refusedAudiences?: { readonly values: readonly string[]; readonly reason: string };
  /** At run time: a token whose only `aud` is this is refused with its own reason. */
  readonly soleAudience?: { readonly value: string; readonly reason: string };
  /** At start: why a step-up requirement whose claim the row turns `off` cannot be checked. */
  readonly uncarried?: string;
}

// Auth0 reserves these names: an Action cannot add them to an access token, and Auth0's own step-up
// for APIs is scope-based (https://auth0.com/docs/secure/tokens/json-web-tokens/create-custom-claims
// "General restrictions"; https://auth0.com/docs/secure/multi-factor-authentication/step-up-authentication/configure-step-up-authentication-for-apis).
const AUTH0_STEP_UP = {
  acrClaim: 'off',
  amrClaim: 'off',
  authTimeClaim: 'off',
  uncarried:
    'Auth0 access tokens carry no "acr", "amr" or "auth_time" and an Action cannot add claims by those names; set the issuer\'s "acrClaim", "amrClaim" or "authTimeClaim" to namespaced claims a post-login Action adds (docs/connect-your-idp.md)',
} as const;

const PRESETS = {
  // RFC 9068 §2.1/§2.2 (https://www.rfc-editor.org/rfc/rfc9068): `typ: at+jwt` is the
  // discriminator; the client claim stays the top-level `clientClaims`. §2.2.1: `acr`, `amr` and
  // `auth_time` as in OIDC Core. The schema's defaults.
  rfc9068: {},
  // https://auth0.com/docs/secure/tokens/access-tokens/access-token-profiles ("Auth0" profile):
  // typ JWT, client in `azp`, `scope` string; the ID token's `aud` is the client id.
  auth0: { requireTyp: 'JWT', clientClaims: ['azp'], scopeClaims: ['scope'], ...AUTH0_STEP_UP },
  // The same page, "RFC 9068" profile: typ at+jwt, client in `client_id`.
  'auth0-rfc9068': { clientClaims: ['client_id'], scopeClaims: ['scope'], ...AUTH0_STEP_UP },
  // https://developer.okta.com/docs/reference/api/oidc/#access-token and
  // https://developer.okta.com/docs/concepts/auth-servers/: no `typ`, `cid`, `scp` array, `ver: 1`;
  // ID tokens carry `amr`, `idp`. Tokens of the org authorization server only Okta can validate.
  okta: {
    requireTyp: 'off',
    clientClaims: ['cid'],
    scopeClaims: ['scp'],
    requireClaims: ['ver=1'],
    refuseClaims: [...ALWAYS_REFUSED, 'amr', 'idp'],
    // https://developer.okta.com/docs/guides/step-up-authentication/main/: `acr` (after
    // `acr_values`) and `auth_time` are in the access token; `amr` only in the ID token.
    amrClaim: 'off',
    uncarried:
      'Okta puts "amr" in ID tokens only (the okta preset refuses access tokens carrying it); require an "acrValues" such as "phr" instead',
    issuerPath: {
      pattern: /^\/oauth2\/(?!v1\/?$)[^/]+\/?$/,
      reason:
        "the okta preset is for a custom authorization server (https://TENANT.okta.com/oauth2/default or /oauth2/ID); the org authorization server issues tokens for Okta's own APIs that only Okta can validate",
    },
    refusedAudiences: {
      values: ['origin'],
      reason: "is the org authorization server's audience (tokens for Okta's own APIs)",
    },
  },
  // https://learn.microsoft.com/en-us/entra/identity-platform/access-token-claims-reference:
  // v2 tokens have `ver: "2.0"` and `azpacr` (access tokens only), client in `azp`, delegated
  // permissions in `scp`, app-only ones in `roles`. Tokens of sessions under continuous access
  // evaluation live up to 28 h (https://learn.microsoft.com/en-us/entra/identity/conditional-access/concept-continuous-access-evaluation).
  entra: {
    requireTyp: 'JWT',
    clientClaims: ['azp'],
    scopeClaims: ['scp', 'roles'],
    requireClaims: ['ver=2.0', 'azpacr'],
    maxTokenAge: '28h',
    // The same page: v2 access tokens name the Conditional Access authentication contexts met
    // (`c1`…`c99`) in the array `acrs`; `amr` is a v1 claim and no access token has `auth_time`.
    acrClaim: 'acrs',
    amrClaim: 'off',
    authTimeClaim: 'off',
    uncarried:
      'Entra ID v2 access tokens carry no "amr" or "auth_time": require an authentication context ("acrValues": ["c1"], read from "acrs") whose Conditional Access policy sets the sign-in frequency and the methods',
  },
  // The same page, v1 tokens: `ver: "1.0"`, `appidacr`, client in `appid`.
  'entra-v1': {
    requireTyp: 'JWT',
    clientClaims: ['appid'],
    scopeClaims: ['scp', 'roles'],
    requireClaims: ['ver=1.0', 'appidacr'],
    maxTokenAge: '28h',
    // v1 tokens have `amr` too; `acrs` as in v2; no `auth_time`.
    acrClaim: 'acrs',
    authTimeClaim: 'off',
    uncarried:
      'Entra ID access tokens carry no "auth_time": require an authentication context ("acrValues", read from "acrs") whose Conditional Access policy sets the sign-in frequency',
  },
  // https://www.keycloak.org/docs/latest/server_admin/#_audience: the `typ` claim is `Bearer`
  // on access tokens (`ID`, `Refresh`, `Logout` on the others); every token of a realm has
  // `aud: account` unless an Audience mapper names the API. Step-up
  // (https://www.keycloak.org/docs/latest/server_admin/#_step-up-flow): `acr` is the ACR mapped to
  // the level of authentication reached (the `acr` client scope), `auth_time` comes with the
  // `basic` scope and `amr` with the "Authentication Method Reference (AMR)" mapper: the defaults.
  keycloak: {
    requireTyp: 'JWT',
    clientClaims: ['azp'],
    scopeClaims: ['scope'],
    requireClaims: ['typ=Bearer'],
    refusedAudiences: {
      values: ['account'],
      reason:
        'is on every token of a Keycloak realm; add an Audience mapper that names this API and use that',
    },
    soleAudience: {
      value: 'account',
      reason:
        '"aud" is only Keycloak\'s default "account": the client needs an Audience mapper for this API',
    },
  },
  // https://docs.aws.amazon.com/cognito/latest/developerguide/amazon-cognito-user-pools-using-the-access-token.html:
  // no `typ`, no `aud`; `client_id` and `token_use: "access"` (the ID token has `token_use: "id"`
  // and `aud` = the client id), so `audience` is the app client id matched against `client_id`.
  cognito: {
    requireTyp: 'off',
    clientClaims: ['client_id'],
    scopeClaims: ['scope'],
    audienceClaim: 'client_id',
    requireClaims: ['token_use=access'],
    // The same page: `auth_time` is in the access token; `acr` and `amr` are not.
    acrClaim: 'off',
    amrClaim: 'off',
    uncarried:
      'Cognito access tokens carry "auth_time" but no "acr" or "amr": use "maxAge" alone, or name a claim a pre token generation trigger adds in "acrClaim"/"amrClaim"',
  },
  // Opaque `ya29.` tokens only Google can check, at its tokeninfo endpoint (POSTed as
  // google-auth-library's getTokenInfo does); `aud`/`azp` are the OAuth client id, `scope` a string.
  // https://developers.google.com/identity/protocols/oauth2 , https://github.com/googleapis/google-auth-library-nodejs
  // Its tokeninfo answer says nothing of how the user signed in.
  google: {
    type: 'tokeninfo',
    clientClaims: ['azp', 'aud'],
    scopeClaims: ['scope'],
    acrClaim: 'off',
    amrClaim: 'off',
    authTimeClaim: 'off',
    uncarried:
      'Google\'s tokeninfo answer carries no "acr", "amr" or "auth_time": a Google access token cannot meet a step-up requirement',
  },
} as const satisfies Record<string, PresetRow>;

export type PresetName = keyof typeof PRESETS;
const CHECKS = ['issuerPath', 'refusedAudiences', 'soleAudience', 'uncarried'];
export const PRESET_NAMES = Object.keys(PRESETS) as [PresetName, ...PresetName[]];
const rowOf = (name: PresetName): PresetRow => PRESETS[name];

/**
 * The issuer as written with its preset's row under it: the row's `type` when none is written
 * (`google` makes a tokeninfo issuer) and its settings where the issuer sets none. The top-level
 * `clientClaims`, when given, is explicit too and wins over the row's. An issuer of another type
 * than its preset's is returned as written, for the schema or checkPresetIssuer to report.
 */
export function withPreset(raw: unknown, rootClientClaimsGiven: boolean): unknown {
  const named = typeof raw === 'object' && raw !== null && 'preset' in raw ? raw.preset : undefined;
  if (!Object.hasOwn(PRESETS, String(named))) return raw;
  const written = raw as { readonly preset: PresetName; readonly type?: unknown };
  const row = rowOf(written.preset);
  const type = row.type ?? 'jwt';
  if ((written.type ?? type) !== type) return raw;
  // The checks a row adds are not settings; the top-level `clientClaims` wins over the row's.
  const settings = Object.entries(row).filter(
    ([key]) => !CHECKS.includes(key) && !(key === 'clientClaims' && rootClientClaimsGiven),
  );
  return { type, ...Object.fromEntries(settings), ...written };
}

/** The rules a preset makes at start, each problem at the field it is about and naming why. */
export function checkPresetIssuer(
  issuer: JwtIssuer | TokeninfoIssuer,
  report: (field: string, message: string) => void,
): void {
  const row = rowOf(issuer.preset);
  if ((row.type ?? 'jwt') !== issuer.type)
    report(
      'preset',
      `"${issuer.preset}" is for ${row.type ?? 'JWT'} issuers, this one is "${issuer.type}"`,
    );
  const url = URL.parse(issuer.issuer);
  if (url === null) return; // the issuer URL is reported by its own kind
  if (row.issuerPath !== undefined && !row.issuerPath.pattern.test(url.pathname))
    report('issuer', row.issuerPath.reason);
  const refused = row.refusedAudiences;
  const values = refused?.values.map((value) => (value === 'origin' ? url.origin : value)) ?? [];
  if (values.some((value) => value === issuer.audience || `${value}/` === issuer.audience))
    report('audience', `"${issuer.audience}" ${refused?.reason}`);
}

/** The run-time reason a preset gives for an audience refusal, when it has its own. */
export function soleAudienceReason(preset: PresetName, aud: unknown): string | undefined {
  const sole = rowOf(preset).soleAudience;
  const only: unknown = Array.isArray(aud) && aud.length === 1 ? aud[0] : aud;
  return sole !== undefined && only === sole.value ? sole.reason : undefined;
}

/** Each step-up requirement of a policy and the issuer setting naming the claim it reads. */
const STEP_UP_CLAIMS = [
  ['acrValues', 'acrClaim', 'acr'],
  ['amrValues', 'amrClaim', 'amr'],
  ['maxAge', 'authTimeClaim', 'auth_time'],
] as const;

/**
 * At start: a policy's step-up requirement that one of its issuers' access tokens cannot carry
 * (its claim `off`, by the preset or as written), reported at the requirement with the preset's
 * reason. Introspection answers may carry all three (RFC 9470 §6.2), so they are never refused.
 */
export function checkStepUpIssuer(
  issuer: IssuerConfig,
  policy: Partial<Pick<PolicyConfig, 'acrValues' | 'amrValues' | 'maxAge'>>,
  report: (field: string, message: string) => void,
): void {
  if (issuer.type === 'introspection') return;
  for (const [requirement, setting, claim] of STEP_UP_CLAIMS) {
    if (policy[requirement] === undefined || issuer[setting] !== undefined) continue;
    const row = rowOf(issuer.preset);
    const said = row[setting] === 'off' && row.uncarried !== undefined ? `: ${row.uncarried}` : '';
    report(
      requirement,
      `issuer "${issuer.issuer}" (preset "${issuer.preset}") has "${setting}" off: its access tokens carry no "${claim}"${said}`,
    );
  }
}

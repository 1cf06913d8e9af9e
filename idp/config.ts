// Dev IdP settings, read once from IDP_* variables into a frozen object; every problem is reported
// together so a bad environment fails at start with one message.

/** Everything the dev IdP needs to know, validated. */
export interface IdpConfig {
  /** Address to bind; loopback by default, `0.0.0.0` inside a container. */
  readonly host: string;
  /** TCP port; 0 asks the kernel for a free one. */
  readonly port: number;
  /** Fixed issuer URL, or undefined to use `http://127.0.0.1:<bound port>`. */
  readonly issuer: string | undefined;
  /** `aud` of every access token (the API the verifier protects). */
  readonly audience: string;
  /** Client ids allowed at /authorize and /token. */
  readonly clients: readonly string[];
  /** Whether the dev-only control API under /dev/ answers at all. */
  readonly control: boolean;
  /** Access token lifetime in seconds. */
  readonly tokenTtlSeconds: number;
  /** `sub` of the user signed in through the authorization-code flow. */
  readonly userSub: string;
  /** `name` of that user, in its ID token and at the UserInfo endpoint. */
  readonly userName: string;
  /** Origins (besides loopback ones) a redirect_uri may point to. */
  readonly redirectOrigins: readonly string[];
  /** Back-channel logout URIs (the gate's `/backchannel-logout`) that get a logout token at sign-out. */
  readonly backchannelLogoutUris: readonly string[];
  /** Receivers (the gate's `/ssf/events`) that get each Shared Signals event pushed. */
  readonly ssfPushUris: readonly string[];
  /** `aud` of the SETs: the receiver's name in its stream. */
  readonly ssfAudience: string;
}

export const IDP_DEFAULTS = Object.freeze({
  port: 8081,
  audience: 'secret-gate-api',
  clients: ['spa-demo', 'partner-app'],
  tokenTtlSeconds: 3600,
  userSub: 'demo-user',
  userName: 'Dana Demo',
  ssfAudience: 'secret-gate',
});

const LIST = /[\s,]+/;

/** Parses IDP_* variables; throws one TypeError naming every bad variable. */
export function loadIdpConfig(env: NodeJS.ProcessEnv = process.env): IdpConfig {
  const problems: string[] = [];
  const port = parseInteger(env.IDP_PORT, IDP_DEFAULTS.port, 0, 65535, 'IDP_PORT', problems);
  const tokenTtlSeconds = parseInteger(
    env.IDP_TOKEN_TTL,
    IDP_DEFAULTS.tokenTtlSeconds,
    1,
    86_400,
    'IDP_TOKEN_TTL',
    problems,
  );
  const issuer = env.IDP_ISSUER?.trim() || undefined;
  if (issuer !== undefined && !isHttpUrl(issuer))
    problems.push('"IDP_ISSUER" must be an http(s) URL');
  const control = (env.IDP_DEV_CONTROL ?? 'on').trim().toLowerCase();
  if (!['on', 'off', 'true', 'false', '1', '0'].includes(control)) {
    problems.push('"IDP_DEV_CONTROL" must be on or off');
  }
  const clients = env.IDP_CLIENTS
    ? env.IDP_CLIENTS.split(LIST).filter(Boolean)
    : IDP_DEFAULTS.clients;
  if (clients.length === 0) problems.push('"IDP_CLIENTS" must list at least one client id');
  const redirectOrigins = (env.IDP_REDIRECT_ORIGINS ?? '').split(LIST).filter(Boolean);
  const backchannelLogoutUris = (env.IDP_BACKCHANNEL_LOGOUT_URIS ?? '').split(LIST).filter(Boolean);
  const ssfPushUris = (env.IDP_SSF_PUSH_URIS ?? '').split(LIST).filter(Boolean);
  for (const uri of ssfPushUris)
    if (!isHttpUrl(uri)) problems.push(`"IDP_SSF_PUSH_URIS" entry "${uri}" is not an http(s) URL`);
  for (const uri of backchannelLogoutUris)
    if (!isHttpUrl(uri))
      problems.push(`"IDP_BACKCHANNEL_LOGOUT_URIS" entry "${uri}" is not an http(s) URL`);
  for (const origin of redirectOrigins) {
    if (!isHttpUrl(origin))
      problems.push(`"IDP_REDIRECT_ORIGINS" entry "${origin}" is not an http(s) origin`);
  }
  if (problems.length > 0)
    throw new TypeError(`invalid dev IdP configuration: ${problems.join('; ')}`);
  return Object.freeze({
    host: env.IDP_HOST?.trim() || '127.0.0.1',
    port,
    issuer: issuer?.replace(/\/+$/, ''),
    audience: env.IDP_AUDIENCE?.trim() || IDP_DEFAULTS.audience,
    clients: Object.freeze([...clients]),
    control: ['on', 'true', '1'].includes(control),
    tokenTtlSeconds,
    userSub: env.IDP_USER_SUB?.trim() || IDP_DEFAULTS.userSub,
    userName: env.IDP_USER_NAME?.trim() || IDP_DEFAULTS.userName,
    redirectOrigins: Object.freeze(redirectOrigins.map((o) => new URL(o).origin)),
    backchannelLogoutUris: Object.freeze(backchannelLogoutUris),
    ssfPushUris: Object.freeze(ssfPushUris),
    ssfAudience: env.IDP_SSF_AUDIENCE?.trim() || IDP_DEFAULTS.ssfAudience,
  });
}

function parseInteger(
  raw: string | undefined,
  fallback: number,
  min: number,
  max: number,
  name: string,
  problems: string[],
): number {
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    problems.push(`"${name}" must be an integer from ${min} to ${max}`);
    return fallback;
  }
  return value;
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

// The verifier's one configuration model: every setting, its kind, its default, its environment
// variable and its meaning, in one table. The JSON file and the VERIFIER_* variables are two
// spellings of the same document (config-env.ts converts the variables); config-validate.ts walks
// these tables to validate it; the types below and docs/configuration.md are derived from them.
//
// Adding a setting is a one-place change: add a row to the table it belongs to
// (`rootSettings`, one of the issuer tables, or `policySettings`) with its kind, its default (or
// `optional`), its `doc` sentence and, if operators may set it from the environment, an `env`
// name. The type of the validated config, the unknown-field check, the environment variable,
// `--check-config` and the configuration reference follow. A plugin declares its own section
// (see `cloudFrontSection`) and is listed here with `plugin()`.
import { cloudFrontSection } from './cloudfront/gate-config.js';
import {
  algorithms,
  bytes,
  count,
  duration,
  flag,
  insecureUrlProblem,
  isLoopbackHost,
  list,
  listen,
  oneOf,
  readSecret,
  secretSource,
  text,
  typ,
  url,
  type FileReader,
  type Kind,
  type PluginSection,
  type Problems,
} from './config-kinds.js';
import { checkPresetIssuer, presetSettings } from './presets.js';

export interface Setting<Value> {
  readonly kind: Kind<unknown>;
  readonly doc: string;
  readonly env?: string;
  /** Document form (what an operator writes), parsed like a given value. */
  readonly default?: unknown;
  /** The default is this top-level setting's value (an issuer's timeout is `fetchTimeout`). */
  readonly inherit?: 'fetchTimeout' | 'clientClaims';
  readonly optional?: boolean;
  /** Reads files (or variables) the value names, after validation (plugins, secrets). */
  readonly load?: (
    value: never,
    where: string,
    read: FileReader,
    problems: Problems,
    env: NodeJS.ProcessEnv,
  ) => unknown;
  /** Never read: carries the validated type. */
  readonly value?: Value;
}

interface Spec {
  readonly doc: string;
  readonly env?: string;
}

/** A setting the document must give. */
export function required<T>(kind: Kind<T>, spec: Spec): Setting<T> {
  return { kind, ...spec };
}

/** A setting with a default, written as an operator would (`'30s'`, `['azp']`). */
export function defaulted<T>(
  kind: Kind<T>,
  fallback: unknown,
  spec: Spec,
  inherit?: 'fetchTimeout' | 'clientClaims',
): Setting<T> {
  return { kind, default: fallback, ...spec, ...(inherit ? { inherit } : {}) };
}

/** A setting that may be left out (undefined in the validated config). */
export function optional<T>(kind: Kind<T>, spec: Spec): Setting<T | undefined> {
  return { kind, optional: true, ...spec };
}

/** A plugin's own section: validated by it, then loaded through the one file reader. */
export function plugin<S, L>(section: PluginSection<S, L>, doc: string): Setting<L | undefined> {
  return { kind: section.kind, optional: true, doc, load: section.load };
}

/**
 * A credential: inline, or read once at start from a file or a variable, so it can come from a
 * Kubernetes Secret instead of a ConfigMap. The validated value is the secret itself; `minBytes`
 * is checked on the value read, wherever it came from.
 */
export function secret(spec: Spec, minBytes = 1): Setting<string> {
  return {
    kind: secretSource,
    ...spec,
    load: (source: never, where, read, problems, env) => {
      const value = readSecret(source, where, read, env, problems);
      if (value !== '' && Buffer.byteLength(value) < minBytes)
        problems.push(`${where}: must be at least ${minBytes} bytes`);
      return value;
    },
  };
}

/** A credential that may be left out (undefined in the validated config). */
export function optionalSecret(spec: Spec, minBytes = 1): Setting<string | undefined> {
  return { ...secret(spec, minBytes), optional: true };
}

export type Table = { readonly [name: string]: Setting<unknown> | Table };

/** The validated shape of a table. */
export type Values<T extends Table> = {
  readonly [K in keyof T]: T[K] extends Setting<infer V>
    ? V
    : T[K] extends Table
      ? Values<T[K]>
      : never;
};

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export const rootSettings = {
  listen: defaulted(listen, '127.0.0.1:8090', {
    env: 'VERIFIER_LISTEN',
    doc: '`host:port`, `[v6]:port` or `unix:/absolute/path.sock`.',
  }),
  transport: defaulted(oneOf(['auto', 'uws', 'node'], 'auto, uws or node'), 'auto', {
    env: 'VERIFIER_TRANSPORT',
    doc: '`uws`, `node` or `auto` (uWebSockets.js; node:http with a warning only when the native addon cannot load). The transport in use is in `/metrics`.',
  }),
  logLevel: defaulted(oneOf(LOG_LEVELS, `one of ${LOG_LEVELS.join(', ')}`), 'info', {
    env: 'VERIFIER_LOG_LEVEL',
    doc: 'pino level: `fatal`, `error`, `warn`, `info`, `debug`, `trace`, `silent`.',
  }),
  cache: {
    maxEntries: defaulted(count, '100000', {
      env: 'VERIFIER_CACHE_MAX_ENTRIES',
      doc: 'Decision cache bound by count.',
    }),
    maxBytes: defaulted(bytes, '64m', {
      env: 'VERIFIER_CACHE_MAX_BYTES',
      doc: 'Decision cache bound by estimated bytes.',
    }),
    maxTtl: defaulted(duration, '5m', {
      env: 'VERIFIER_CACHE_MAX_TTL',
      doc: "Longest time a decision is reused (never past the token's `exp`).",
    }),
    edgeTtl: defaulted(duration, '5s', {
      env: 'VERIFIER_EDGE_CACHE_TTL',
      doc: "Cap on how long NGINX may reuse an answer (`X-Accel-Expires`, never past the token's `exp` or its key set's trust); `0` turns NGINX's decision cache off. Also how long a retired key can still be honoured at the edge.",
    }),
  },
  jwks: {
    refresh: defaulted(duration, '10m', {
      env: 'VERIFIER_JWKS_REFRESH',
      doc: 'Background refresh interval; a smaller `Cache-Control: max-age` shortens it (not below the cooldown).',
    }),
    cooldown: defaulted(duration, '30s', {
      env: 'VERIFIER_JWKS_COOLDOWN',
      doc: 'At most one fetch per cooldown for unknown `kid`s; also the retry interval after a failed refresh.',
    }),
    maxStale: defaulted(duration, '24h', {
      env: 'VERIFIER_JWKS_MAX_STALE',
      doc: 'How long the last good key set keeps serving after refreshes start failing (measured from the last successful fetch). Must be ≥ the refresh interval.',
    }),
  },
  fetchTimeout: defaulted(duration, '5s', {
    env: 'VERIFIER_FETCH_TIMEOUT',
    doc: 'Timeout for discovery and JWKS requests, and the default `timeout` of introspection / user-info issuers.',
  }),
  metricsListen: optional(listen, {
    env: 'VERIFIER_METRICS_LISTEN',
    doc: 'When set, `/metrics` is served on this second listener only (`host:port` or `unix:/path`), not on `listen`, so whoever can reach the auth endpoint cannot read the metrics.',
  }),
  clientClaims: defaulted(list('claim name'), ['azp', 'client_id', 'cid'], {
    env: 'VERIFIER_CLIENT_CLAIM',
    doc: 'Claims tried in order for `X-Auth-Client`; the default `clientClaims` of every issuer.',
  }),
  /** DPoP (RFC 9449) settings shared by every policy whose `dpop` is not `off`. */
  dpop: {
    algorithms: defaulted(algorithms, ['ES256', 'ES384', 'PS256', 'RS256', 'EdDSA'], {
      env: 'VERIFIER_DPOP_ALGORITHMS',
      doc: 'Allowed DPoP proof algorithms (asymmetric only), also advertised as `algs` in `DPoP` challenges.',
    }),
    iatWindow: defaulted(duration, '60s', {
      env: 'VERIFIER_DPOP_IAT_WINDOW',
      doc: "A proof's `iat` may differ from now by this much either way (1s–10m); its `jti` is remembered twice as long.",
    }),
    replayStore: defaulted(text, 'memory', {
      env: 'VERIFIER_DPOP_REPLAY_STORE',
      doc: '`memory` (one process) or a `rediss://` URL every replica shares (`redis://` only to loopback unless `replayAllowPlaintext`). When it does not answer, `required` policies refuse (401) and `allowed` ones check replays per process.',
    }),
    replayPassword: optionalSecret({
      env: 'VERIFIER_DPOP_REPLAY_PASSWORD',
      doc: 'Password of the replay store (Redis `AUTH`), instead of one inside the URL: a string, `{ "file": "/path" }` (a mounted Kubernetes Secret; one trailing newline dropped) or `{ "env": "NAME" }` (a variable outside the `VERIFIER_` prefix), read once at start.',
    }),
    replayAllowPlaintext: defaulted(flag, false, {
      env: 'VERIFIER_DPOP_REPLAY_ALLOW_PLAINTEXT',
      doc: 'Allow a plain `redis://` replay store on a host that is not loopback (`localhost`, 127.0.0.0/8, `[::1]`). Off: such a URL is refused at start; use `rediss://` (TLS).',
    }),
    replayMaxEntries: defaulted(count, '1000000', {
      env: 'VERIFIER_DPOP_REPLAY_MAX_ENTRIES',
      doc: 'Bound of the in-process replay store; when it is full of live `jti`s new proofs are refused rather than one forgotten.',
    }),
    nonceKey: optionalSecret(
      {
        env: 'VERIFIER_DPOP_NONCE_KEY',
        doc: 'At least 32 bytes shared by every replica: turns on stateless server nonces (`DPoP-Nonce`, an HMAC of the time window). A string, `{ "file": "/path" }` or `{ "env": "NAME" }` like `replayPassword`. Unset: no nonces.',
      },
      32,
    ),
  },
  /** Pushed revocation (docs/revocation.md): back-channel logout, Shared Signals, one store. */
  revocation: {
    store: defaulted(text, 'memory', {
      env: 'VERIFIER_REVOCATION_STORE',
      doc: '`memory` (one process) or a `redis://` / `rediss://` URL every replica shares (revocation watermarks and the `jti`s of received logout tokens and SETs).',
    }),
    maxLatency: defaulted(duration, '6s', {
      env: 'VERIFIER_REVOCATION_MAX_LATENCY',
      doc: "Longest time a revoked token may still get its secret through NGINX's edge cache while a receiver is on: the edge reuse becomes at most this minus 1 s (NGINX expires entries in whole seconds), and never more than `cache.edgeTtl`.",
    }),
    logoutTokenMaxAge: defaulted(duration, '2m', {
      env: 'VERIFIER_LOGOUT_TOKEN_MAX_AGE',
      doc: 'How old (by `iat`) a logout token or SET may be; its `jti` is remembered for twice this long.',
    }),
    replayMaxEntries: defaulted(count, '100000', {
      env: 'VERIFIER_REVOCATION_REPLAY_MAX_ENTRIES',
      doc: 'Bound of the in-process `jti` set of received logout tokens and SETs; when it is full of live entries new ones are refused (400) rather than one forgotten.',
    }),
    ssf: {
      transmitter: optional(url, {
        env: 'VERIFIER_SSF_TRANSMITTER',
        doc: 'Shared Signals transmitter issuer: its `/.well-known/ssf-configuration` gives the `jwks_uri`, and SETs must carry it as `iss`. Unset: no Shared Signals receiver.',
      }),
      audience: optional(text, {
        env: 'VERIFIER_SSF_AUDIENCE',
        doc: "This receiver's name in the SETs' `aud` (as registered with the transmitter's stream). Required with `transmitter`.",
      }),
      push: defaulted(flag, true, {
        env: 'VERIFIER_SSF_PUSH',
        doc: 'Accept pushed SETs (RFC 8935) at `POST /ssf/events`.',
      }),
      pollEndpoint: optional(url, {
        env: 'VERIFIER_SSF_POLL_ENDPOINT',
        doc: "The stream's RFC 8936 poll endpoint; when set the verifier polls it, acknowledging the SETs it processed (no inbound route needed).",
      }),
      pollInterval: defaulted(duration, '10s', {
        env: 'VERIFIER_SSF_POLL_INTERVAL',
        doc: 'Pause between polls when nothing more is waiting; errors back off from this up to ten times as long.',
      }),
      pollToken: optional(text, {
        env: 'VERIFIER_SSF_POLL_TOKEN',
        doc: 'Bearer token the transmitter requires on poll requests, if any.',
      }),
      allowHttp: defaulted(flag, false, {
        env: 'VERIFIER_SSF_ALLOW_HTTP',
        doc: "Allow plain `http:` for the transmitter's URLs on a host that is not loopback.",
      }),
    },
  },
} satisfies Table;

export type RootSettings = Values<typeof rootSettings>;

/** Cross-field rules of the top-level settings; `label` names a path as the operator wrote it. */
export function checkRoot(root: RootSettings, label: (path: string) => string, problems: Problems) {
  if (root.jwks.refresh < 1) problems.push(`${label('jwks.refresh')}: must be at least 1s`);
  if (root.jwks.maxStale < root.jwks.refresh)
    problems.push(`${label('jwks.maxStale')}: must be at least ${label('jwks.refresh')}`);
  if (root.fetchTimeout <= 0) problems.push(`${label('fetchTimeout')}: must be greater than 0`);
  const { dpop } = root;
  if (dpop.iatWindow < 1 || dpop.iatWindow > 600)
    problems.push(`${label('dpop.iatWindow')}: must be between 1s and 10m`);
  if (dpop.replayStore !== 'memory' && !/^rediss?:\/\/\S+$/.test(dpop.replayStore))
    problems.push(`${label('dpop.replayStore')}: expected memory or a redis:// / rediss:// URL`);
  else if (!dpop.replayAllowPlaintext && plaintextRedisHost(dpop.replayStore))
    problems.push(
      `${label('dpop.replayStore')}: plain redis:// to a host that is not loopback; use rediss://, or opt in with "replayAllowPlaintext": true (VERIFIER_DPOP_REPLAY_ALLOW_PLAINTEXT=true)`,
    );
  const { revocation } = root;
  if (revocation.store !== 'memory' && !/^rediss?:\/\/\S+$/.test(revocation.store))
    problems.push(`${label('revocation.store')}: expected memory or a redis:// / rediss:// URL`);
  else if (!dpop.replayAllowPlaintext && plaintextRedisHost(revocation.store))
    problems.push(
      `${label('revocation.store')}: plain redis:// to a host that is not loopback; use rediss://, or opt in with "replayAllowPlaintext": true (VERIFIER_DPOP_REPLAY_ALLOW_PLAINTEXT=true)`,
    );
  if (revocation.maxLatency < 1)
    problems.push(`${label('revocation.maxLatency')}: must be at least 1s`);
  if (revocation.logoutTokenMaxAge < 1)
    problems.push(`${label('revocation.logoutTokenMaxAge')}: must be at least 1s`);
  const { ssf } = revocation;
  if (ssf.transmitter !== undefined) {
    if (ssf.audience === undefined)
      problems.push(`${label('revocation.ssf.audience')}: required with a transmitter`);
    for (const [field, at] of [
      ['transmitter', ssf.transmitter],
      ['pollEndpoint', ssf.pollEndpoint],
    ] as const) {
      const problem = at === undefined ? undefined : insecureUrlProblem(at, ssf.allowHttp);
      if (problem !== undefined) problems.push(`${label(`revocation.ssf.${field}`)}: ${problem}`);
    }
  } else if (ssf.pollEndpoint !== undefined) {
    problems.push(`${label('revocation.ssf.pollEndpoint')}: needs a transmitter`);
  }
  if (ssf.pollInterval < 1)
    problems.push(`${label('revocation.ssf.pollInterval')}: must be at least 1s`);
  const { listen, metricsListen } = root;
  if (metricsListen !== undefined && describeListen(metricsListen) === describeListen(listen))
    problems.push(`${label('metricsListen')}: must differ from ${label('listen')}`);
}

/** True for a `redis://` URL (no TLS) whose host is not loopback; proofs' `jti`s and the password
 *  would cross the network in clear. */
function plaintextRedisHost(store: string): boolean {
  if (!store.startsWith('redis://')) return false;
  try {
    return !isLoopbackHost(new URL(store).hostname);
  } catch {
    return true;
  }
}

function describeListen(at: Listen): string {
  return at.kind === 'unix' ? at.path : `${at.host}:${at.port}`;
}

const issuerName = required(url, {
  doc: 'Exact `iss` value (RFC 7519 §4.1.1); also the base for OIDC discovery.',
});
const clientClaims = defaulted(
  list('claim name'),
  undefined,
  { doc: 'Claims tried in order for the client id answered in `X-Auth-Client`.' },
  'clientClaims',
);
const endpoint = optional(url, {
  doc: 'Introspection / user-info URL. Unset: found through OIDC discovery from `issuer`.',
});
const opaqueCacheTtl = defaulted(duration, '60s', {
  doc: "Seconds a positive answer is reused (never past the token's `exp`).",
});
const allowHttp = defaulted(flag, false, {
  doc: "Allow plain `http:` for this issuer's discovery, JWKS, introspection or user-info URLs on a host that is not loopback (`localhost`, 127.0.0.0/8, `[::1]`). Off: such URLs are refused at start and at fetch time.",
});
const timeout = defaulted(
  duration,
  undefined,
  { doc: 'Timeout of one introspection / user-info request.' },
  'fetchTimeout',
);

/** An issuer of JWT access tokens, verified locally against its JWKS. */
export const jwtIssuerSettings = {
  issuer: { ...issuerName, env: 'VERIFIER_ISSUER' },
  audience: required(text, {
    env: 'VERIFIER_AUDIENCE',
    doc: '`aud` (string or array) must contain it, so an ID token for the SPA is not an access token.',
  }),
  jwksUri: optional(url, {
    env: 'VERIFIER_JWKS_URI',
    doc: 'JWKS URL. Unset: `jwks_uri` from `${issuer}/.well-known/openid-configuration` (whose `issuer` must match).',
  }),
  algorithms: defaulted(algorithms, ['RS256', 'ES256', 'PS256', 'EdDSA'], {
    env: 'VERIFIER_ALGORITHMS',
    doc: 'Allowed `alg` values; asymmetric only (RS*, PS*, ES*, EdDSA). `none` and HS* are refused at start.',
  }),
  clockTolerance: defaulted(duration, '30s', {
    env: 'VERIFIER_CLOCK_TOLERANCE',
    doc: 'Leeway for `exp`, `nbf` and `iat`.',
  }),
  requireTyp: defaulted(typ, 'at+jwt', {
    env: 'VERIFIER_REQUIRE_TYP',
    doc: 'RFC 9068 §2.1: the `typ` header every token must carry (`application/` prefix allowed), so an ID token or another JWT cannot pass as an access token. `off` for an issuer that does not type its access tokens.',
  }),
  maxTokenAge: defaulted(duration, '24h', {
    env: 'VERIFIER_MAX_TOKEN_AGE',
    doc: 'Longest lifetime accepted: `exp` may be at most this far after `iat` (when present) and after now (plus `clockTolerance`). A token valid for years is refused.',
  }),
  allowHttp: { ...allowHttp, env: 'VERIFIER_ALLOW_HTTP' },
  clientClaims,
  ...presetSettings,
  logoutAudiences: defaulted(list(), [], {
    env: 'VERIFIER_LOGOUT_AUDIENCES',
    doc: "Client ids (the SPA's) whose back-channel logout tokens from this issuer are accepted at `POST /backchannel-logout` (OIDC Back-Channel Logout 1.0). Empty: this issuer's logout tokens are refused.",
  }),
} satisfies Table;

/** An issuer of opaque tokens, checked through RFC 7662 token introspection. */
export const introspectionIssuerSettings = {
  issuer: issuerName,
  endpoint,
  clientId: required(text, { doc: 'Client id for `client_secret_basic` at the endpoint.' }),
  clientSecret: secret({
    doc: 'Client secret for `client_secret_basic`: a string, `{ "file": "/path" }` (e.g. a mounted Kubernetes Secret; one trailing newline dropped) or `{ "env": "NAME" }` (a variable outside the `VERIFIER_` prefix), read once at start.',
  }),
  audience: required(text, {
    doc: "This API's identifier: the introspection answer's `aud` must contain it, so an active token issued for another API is refused (the verifier refuses to start without it).",
  }),
  cacheTtl: opaqueCacheTtl,
  timeout,
  allowHttp,
  clientClaims,
} satisfies Table;

/**
 * An issuer of opaque tokens that are valid exactly when its user-info endpoint answers 200.
 * User-info claims describe the user (and some IdPs let users edit them), so no client id is ever
 * read from them: `X-Auth-Client` stays empty and NGINX serves its default set.
 */
export const userinfoIssuerSettings = {
  issuer: issuerName,
  endpoint,
  cacheTtl: opaqueCacheTtl,
  timeout,
  allowHttp,
} satisfies Table;

/**
 * An issuer of opaque tokens only it can check, at a tokeninfo endpoint that is not RFC 7662
 * (Google, `"preset": "google"`): the answer names the client (`aud`/`azp`) and the scopes.
 */
export const tokeninfoIssuerSettings = {
  issuer: issuerName,
  audience: required(text, {
    doc: "The OAuth client id the tokens must be issued to (the answer's `aud`): tokens of every other app of the IdP are refused.",
  }),
  endpoint: defaulted(url, 'https://oauth2.googleapis.com/tokeninfo', {
    env: 'VERIFIER_TOKENINFO_URI',
    doc: 'Tokeninfo URL; the token is POSTed as the form field `access_token`, never put in a URL.',
  }),
  cacheTtl: opaqueCacheTtl,
  timeout,
  allowHttp,
  clientClaims,
  preset: presetSettings.preset,
  scopeClaims: presetSettings.scopeClaims,
  requireClaims: presetSettings.requireClaims,
  refuseClaims: presetSettings.refuseClaims,
} satisfies Table;

export const issuerTables = {
  jwt: jwtIssuerSettings,
  introspection: introspectionIssuerSettings,
  userinfo: userinfoIssuerSettings,
  tokeninfo: tokeninfoIssuerSettings,
} as const;

export type IssuerType = keyof typeof issuerTables;
export type JwtIssuer = { readonly type: 'jwt' } & Values<typeof jwtIssuerSettings>;
export type IntrospectionIssuer = { readonly type: 'introspection' } & Values<
  typeof introspectionIssuerSettings
>;
export type UserinfoIssuer = { readonly type: 'userinfo' } & Values<typeof userinfoIssuerSettings>;
export type TokeninfoIssuer = { readonly type: 'tokeninfo' } & Values<
  typeof tokeninfoIssuerSettings
>;
export type IssuerConfig = JwtIssuer | IntrospectionIssuer | UserinfoIssuer | TokeninfoIssuer;

export const policySettings = {
  issuers: required(list('issuer'), {
    doc: '`iss` values this policy accepts (checked before any key fetch); each is a configured issuer, at most one of them opaque.',
  }),
  scopes: defaulted(list(), [], {
    env: 'VERIFIER_REQUIRED_SCOPES',
    doc: 'Scopes (`scope` string or `scp` array) that must all be granted; a missing one gives 403.',
  }),
  cloudfront: plugin(
    cloudFrontSection,
    'CloudFront signed cookies for allowed requests of this policy (see below).',
  ),
  dpop: defaulted(oneOf(['off', 'allowed', 'required'], 'off, allowed or required'), 'off', {
    env: 'VERIFIER_DPOP',
    doc: 'DPoP (RFC 9449): `off` reads Bearer tokens only; `allowed` also takes DPoP-bound tokens with a proof per request; `required` takes only those. A bound token is never accepted as Bearer.',
  }),
  revocation: defaulted(oneOf(['checked', 'required'], 'checked or required'), 'checked', {
    env: 'VERIFIER_REVOCATION',
    doc: 'With a revocation receiver on, every token is checked against the revocation store. When the shared store is unreachable, `checked` serves (and counts it in `verifier_revocation_unchecked_total`) and `required` refuses (401 `revocation_unavailable`).',
  }),
} satisfies Table;

export type PolicyConfig = { readonly name: string } & Values<typeof policySettings>;
export type DpopMode = PolicyConfig['dpop'];
export type DpopConfig = RootSettings['dpop'];
export type RevocationConfig = RootSettings['revocation'];

/** Cross-field rules of one issuer: every URL the verifier will fetch is https or loopback. */
export function checkIssuer(
  issuer: IssuerConfig,
  label: (path: string) => string,
  problems: Problems,
) {
  // The URL the verifier fetches first: the one configured, else the issuer's discovery document.
  const [field, fetched] =
    issuer.type === 'jwt'
      ? issuer.jwksUri === undefined
        ? ['issuer', issuer.issuer]
        : ['jwksUri', issuer.jwksUri]
      : issuer.endpoint === undefined
        ? ['issuer', issuer.issuer]
        : ['endpoint', issuer.endpoint];
  const problem = insecureUrlProblem(fetched, issuer.allowHttp);
  if (problem !== undefined) problems.push(`${label(field)}: ${problem}`);
  if (issuer.type === 'jwt' && issuer.maxTokenAge <= 0)
    problems.push(`${label('maxTokenAge')}: must be greater than 0`);
  if (issuer.type === 'jwt' || issuer.type === 'tokeninfo')
    checkPresetIssuer(issuer, issuer.audience, label, problems);
}

/** Cross-field rules of one policy. */
export function checkPolicy(
  policy: PolicyConfig,
  issuers: ReadonlyMap<string, IssuerConfig>,
  where: string,
  problems: Problems,
): void {
  for (const iss of policy.issuers) {
    if (!issuers.has(iss)) problems.push(`${where}: "${iss}" is not a configured issuer`);
  }
  const opaque = policy.issuers.filter((iss) => (issuers.get(iss)?.type ?? 'jwt') !== 'jwt');
  // An opaque token does not say who issued it, so a policy can only ask one opaque issuer.
  if (opaque.length > 1)
    problems.push(`${where}: at most one introspection/userinfo issuer per policy`);
}

/** Policy names appear in `?policy=` and in cache keys. */
export const POLICY_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** The policy a /verify without `?policy=` asks for. */
export const DEFAULT_POLICY = 'default';

/** The single-issuer variables' policy: the one NGINX's /secret asks for (also `default`). */
export const ENV_POLICY = 'secret';

export type VerifierConfig = RootSettings & {
  readonly issuers: ReadonlyMap<string, IssuerConfig>;
  readonly policies: ReadonlyMap<string, PolicyConfig>;
};

export type { Listen } from './config-kinds.js';
import type { Listen } from './config-kinds.js';
export type TransportChoice = RootSettings['transport'];

/** Tokens larger than this are refused before any parsing (RFC 8725 hygiene; 8 KiB). */
export const MAX_TOKEN_BYTES = 8192;

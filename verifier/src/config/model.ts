// The verifier's one configuration schema (zod): every setting, its kind, its default as an
// operator writes it, its VERIFIER_* variable and its meaning; the types, verifier/config.schema.json
// and docs/configuration.md derive from it. The rules between settings (rules.ts) run as its checks.
// Sections of their own: `redis` (redis.ts) and a policy's `cloudfront` (cloudfront.ts).
import { z } from 'zod';
import { cloudFrontSection } from './cloudfront.js';
import { mintSection } from './mint.js';
import { ALWAYS_REFUSED, checkPresetIssuer, PRESET_NAMES } from './presets.js';
import { redisSection } from './redis.js';
import { documentRules, firstFetchRule, rootRules, rule, stepUpRule } from './rules.js';
import {
  algorithms,
  bytes,
  claimOrOff,
  claimRules,
  count,
  duration,
  env,
  flag,
  insecureUrlProblem,
  list,
  listen,
  oneOf,
  positive,
  rate,
  says,
  secret,
  secretFile,
  section,
  text,
  typ,
  url,
  DEFAULT_LISTEN,
  type Listen,
  type Loaded,
} from './values.js';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const logLevel = oneOf(LOG_LEVELS, `one of ${LOG_LEVELS.join(', ')}`);
/** Intervals the verifier waits or keeps something for, and timeouts: never zero. */
const atLeast1s = duration.refine((seconds) => seconds >= 1, 'must be at least 1s');
const iatWindow = duration.refine((s) => s >= 1 && s <= 600, 'must be between 1s and 10m');
/** Clock skew between hosts that keep time is seconds; minutes more would keep expired tokens. */
const MAX_CLOCK_TOLERANCE = 300;
const clockTolerance = duration.refine(
  (seconds) => seconds <= MAX_CLOCK_TOLERANCE,
  `must be at most ${MAX_CLOCK_TOLERANCE}s (5m): a token is accepted this long after its "exp"`,
);
const offByDefault = flag.prefault(false);
/** The DPoP proof algorithms taken by default; NGINX's metadata (SG_DPOP_ALGORITHMS) lists them. */
export const DEFAULT_DPOP_ALGORITHMS = ['ES256', 'ES384', 'PS256', 'RS256', 'EdDSA'] as const;
/** A step-up `max_age`: RFC 9470 and OIDC Core say it in whole seconds. */
const wholeSeconds = duration.refine(
  (seconds) => Number.isInteger(seconds) && seconds >= 1,
  'must be a whole number of seconds, at least 1s',
);
const claimNames = list('claim name');

/** The top-level settings, each row checking its own value; the rules between them in rules.ts. */
export const rootSchema = section({
  listen: env('VERIFIER_LISTEN', listen.prefault(DEFAULT_LISTEN)).describe(
    '`host:port`, `[v6]:port` or `unix:/absolute/path.sock`.',
  ),
  logLevel: env('VERIFIER_LOG_LEVEL', logLevel.prefault('info')).describe(
    'pino level: `fatal`, `error`, `warn`, `info`, `debug`, `trace`, `silent`.',
  ),
  cache: section({
    maxEntries: env('VERIFIER_CACHE_MAX_ENTRIES', count.prefault('100000')).describe(
      'Decision cache bound by count.',
    ),
    maxBytes: env('VERIFIER_CACHE_MAX_BYTES', bytes.prefault('64m')).describe(
      'Decision cache bound by estimated bytes.',
    ),
    maxTtl: env('VERIFIER_CACHE_MAX_TTL', duration.prefault('5m')).describe(
      "Longest time a decision is reused (never past the token's `exp`).",
    ),
    edgeTtl: env('VERIFIER_EDGE_CACHE_TTL', duration.prefault('5s')).describe(
      "Cap on how long NGINX may reuse an answer (`X-Accel-Expires`, never past the token's `exp` or its key set's trust); `0` turns NGINX's decision cache off. Also how long a retired key can still be honoured at the edge.",
    ),
  }).prefault({}),
  /** How the file VERIFIER_CONFIG names is followed (reloader.ts); `npm start` keeps the pace. */
  reload: section({
    poll: env('VERIFIER_RELOAD_POLL', positive.prefault('1s')).describe(
      'How often the configuration file (`VERIFIER_CONFIG`) is read for a change (`SIGHUP` reads it at once): with `settle`, the first part of the bound on applying a changed policy file. `npm start -- --config` reads its policy file at the same pace. Read at start only.',
    ),
    settle: env('VERIFIER_RELOAD_SETTLE', duration.prefault('200ms')).describe(
      'A changed file is applied once it reads the same twice this far apart, so a file still being written is never taken (`0`: the first read is taken). Read at start only.',
    ),
  }).prefault({}),
  /** The per-client limit of /verify calls (http/call-limit.ts): what bounds the verifier's CPU. */
  callLimit: section({
    rate: env('VERIFIER_VERIFY_RATE', rate.prefault('200r/s')).describe(
      'Per-client rate of `/verify` calls (`Nr/s` or `Nr/m`), the client as NGINX names it in `X-SG-Client` (an address after `real_ip`, IPv6 by its /64). Only edge-cache misses and DPoP requests reach the verifier, so this bounds its work under a flood of new, distinct or garbage tokens and never counts cached traffic. Over it: 429 + `Retry-After` at NGINX. Per process: each replica limits on its own.',
    ),
    burst: env('VERIFIER_VERIFY_BURST', count.prefault('400')).describe(
      "Calls a client may make at once beyond the rate (a token bucket of `burst` + 1, refilled at the rate), as NGINX's `limit_req … burst nodelay` counts.",
    ),
  }).prefault({}),
  edgeKeyFile: env('VERIFIER_EDGE_KEY_FILE', secretFile(32).optional()).describe(
    "A file holding the key NGINX proves itself with (`X-SG-Edge-Key`, at least 32 bytes; `SG_EDGE_KEY_FILE` names the same file on NGINX's side), read once at start. When set, `/verify` and the revocation receivers answer a call without it 401 before any other work, so only NGINX names the client the call limit counts. Needed wherever the listener is TCP (a port other processes can reach); unset on a unix socket, whose file mode decides who connects.",
  ),
  /** The decision log (decision/decision-log.ts, docs/decision-log.md). */
  decisionLog: section({
    subjectKey: env('VERIFIER_DECISION_LOG_KEY_FILE', secretFile(32).optional()).describe(
      "A file holding the key (at least 32 bytes) of the decision log's `subject_hash` (HMAC-SHA256 of issuer and `sub`), read once at start. The same file on every replica and across restarts keeps one user's hash the same everywhere; unset, each process draws a random key, so hashes match only within one process's lines.",
    ),
    subject: env(
      'VERIFIER_DECISION_LOG_SUBJECT',
      oneOf(['hash', 'plain']).prefault('hash'),
    ).describe(
      "`hash`: the decision log names the subject only by `subject_hash`; `plain`: also as `subject` (the token's `sub`), for an operator whose log store may hold it.",
    ),
  }).prefault({}),
  resourceMetadataUrl: env('VERIFIER_RESOURCE_METADATA_URL', url.optional()).describe(
    "The gate's Protected Resource Metadata document (RFC 9728), which NGINX serves at `/.well-known/oauth-protected-resource` of `SG_EXTERNAL_ORIGIN`: every challenge the verifier writes carries it as `resource_metadata` (RFC 9728 §5.1), so a client learns the authorization server, scopes and DPoP algorithms from the answer. Set by configuration, never taken from a request header, so each challenge is fixed at start. Unset: challenges without it.",
  ),
  jwks: section({
    refresh: env('VERIFIER_JWKS_REFRESH', atLeast1s.prefault('10m')).describe(
      'Background refresh interval; a smaller `Cache-Control: max-age` shortens it (not below the cooldown).',
    ),
    cooldown: env('VERIFIER_JWKS_COOLDOWN', duration.prefault('30s')).describe(
      'At most one fetch per cooldown for unknown `kid`s; also the retry interval after a failed refresh.',
    ),
    maxStale: env('VERIFIER_JWKS_MAX_STALE', duration.prefault('24h')).describe(
      'How long the last good key set keeps serving after refreshes start failing (measured from the last successful fetch). Must be ≥ the refresh interval.',
    ),
  }).prefault({}),
  fetchTimeout: env('VERIFIER_FETCH_TIMEOUT', positive.prefault('5s')).describe(
    'Timeout for discovery and JWKS requests, and the default `timeout` of introspection / tokeninfo issuers.',
  ),
  metricsListen: env('VERIFIER_METRICS_LISTEN', listen.optional()).describe(
    'When set, `/metrics` is served on this second listener only (`host:port` or `unix:/path`), not on `listen`, so whoever can reach the auth endpoint cannot read the metrics.',
  ),
  clientClaims: env(
    'VERIFIER_CLIENT_CLAIM',
    claimNames.prefault(['azp', 'client_id', 'cid']),
  ).describe(
    'Claims tried in order for `X-Auth-Client`; the default `clientClaims` of every issuer.',
  ),
  /** DPoP (RFC 9449) settings shared by every policy whose `dpop` is not `off`. */
  dpop: section({
    algorithms: env(
      'VERIFIER_DPOP_ALGORITHMS',
      algorithms.prefault([...DEFAULT_DPOP_ALGORITHMS]),
    ).describe(
      'Allowed DPoP proof algorithms (asymmetric only), also advertised as `algs` in `DPoP` challenges.',
    ),
    iatWindow: env('VERIFIER_DPOP_IAT_WINDOW', iatWindow.prefault('60s')).describe(
      "A proof's `iat` may differ from now by this much either way (1s–10m); its `jti` is remembered twice as long.",
    ),
    replayMaxEntries: env('VERIFIER_DPOP_REPLAY_MAX_ENTRIES', count.prefault('1000000')).describe(
      'Bound of the in-process replay store; when it is full of live `jti`s new proofs are refused rather than one forgotten.',
    ),
    nonceKey: env('VERIFIER_DPOP_NONCE_KEY', secret(32).optional()).describe(
      'At least 32 bytes shared by every replica: turns on stateless server nonces (`DPoP-Nonce`, an HMAC of the time window). A string, `{ "file": "/path" }` or `{ "env": "NAME" }` like `redis.password`. Unset: no nonces. The replay store is the shared one of `redis.url`.',
    ),
  }).prefault({}),
  /** The one Redis both shared stores (DPoP replays, revocation) use, and how they reach it. */
  redis: redisSection.prefault({}),
  /** Pushed revocation (docs/revocation.md): back-channel logout, Shared Signals, one store. */
  revocation: section({
    maxLatency: env('VERIFIER_REVOCATION_MAX_LATENCY', atLeast1s.prefault('6s')).describe(
      "Longest time a revoked token may still get its secret through NGINX's edge cache while a receiver is on: the edge reuse becomes at most this minus 1 s (NGINX expires entries in whole seconds), and never more than `cache.edgeTtl`.",
    ),
    logoutTokenMaxAge: env('VERIFIER_LOGOUT_TOKEN_MAX_AGE', atLeast1s.prefault('2m')).describe(
      "How old (by `iat`) a logout token may be; its `jti` is remembered for twice this long (at least this plus twice the issuer's `clockTolerance`).",
    ),
    setMaxAge: env('VERIFIER_SET_MAX_AGE', atLeast1s.prefault('1h')).describe(
      'How old (by `iat`) a Security Event Token may be, pushed or polled (a polled SET may have waited at the transmitter); an older one is refused. Its `jti` is remembered this long plus twice the clock tolerance (30 s), so a replay is refused for as long as the SET itself would be accepted.',
    ),
    replayMaxEntries: env(
      'VERIFIER_REVOCATION_REPLAY_MAX_ENTRIES',
      count.prefault('100000'),
    ).describe(
      'Bound of the in-process `jti` set of received logout tokens and SETs; when it is full of live entries new ones are refused with 503 (`temporarily_unavailable`, the sender retries) rather than one forgotten.',
    ),
    viewMaxEntries: env('VERIFIER_REVOCATION_VIEW_MAX_ENTRIES', count.prefault('250000')).describe(
      "Bound of each replica's view of the revocation watermarks: one per revoked subject, session or address, each kept for its tokens' lifetime (a day with the default `maxTokenAge`), so the default holds a day of three logouts a second; about 600 bytes each (150 MB when full). A revocation this replica cannot hold is refused with 503 (the sender retries) and never acknowledged; a replica that misses one published by another refuses every token its view cannot clear (401 `revocation_unavailable`) and answers 503 on `/readyz` until its view holds all of them again.",
    ),
    receiverRate: env('VERIFIER_REVOCATION_RECEIVER_RATE', rate.prefault('200r/s')).describe(
      'Budget of failed signature checks per issuer key (`iss`, `kid`) on `POST /backchannel-logout` and `POST /ssf/events` together (`Nr/s` or `Nr/m`). Spent only by pushes whose signature does not verify: past it, such a push under that key is answered 429 + `Retry-After` with no log line, while one that verifies is always applied, whoever else pushes from its address. Per process.',
    ),
    receiverBurst: env('VERIFIER_REVOCATION_RECEIVER_BURST', count.prefault('1000')).describe(
      'Failed signature checks a key may take at once beyond `receiverRate` (a token bucket of `receiverBurst` + 1).',
    ),
    ssf: section({
      transmitter: env('VERIFIER_SSF_TRANSMITTER', url.optional()).describe(
        'Shared Signals transmitter issuer: its `/.well-known/ssf-configuration` gives the `jwks_uri`, and SETs must carry it as `iss`. Unset: no Shared Signals receiver.',
      ),
      audience: env('VERIFIER_SSF_AUDIENCE', text.optional()).describe(
        "This receiver's name in the SETs' `aud` (as registered with the transmitter's stream). Required with `transmitter`.",
      ),
      push: env('VERIFIER_SSF_PUSH', flag.prefault(true)).describe(
        'Accept pushed SETs (RFC 8935) at `POST /ssf/events`.',
      ),
      pollEndpoint: env('VERIFIER_SSF_POLL_ENDPOINT', url.optional()).describe(
        "The stream's RFC 8936 poll endpoint; when set the verifier polls it, acknowledging the SETs it processed (no inbound route needed).",
      ),
      pollInterval: env('VERIFIER_SSF_POLL_INTERVAL', atLeast1s.prefault('10s')).describe(
        'Pause between polls when nothing more is waiting; errors back off from this up to ten times as long.',
      ),
      pollToken: env('VERIFIER_SSF_POLL_TOKEN', text.optional()).describe(
        'Bearer token the transmitter requires on poll requests, if any.',
      ),
      allowHttp: env('VERIFIER_SSF_ALLOW_HTTP', offByDefault).describe(
        "Allow plain `http:` for the transmitter's URLs on a host that is not loopback.",
      ),
      emailIssuer: env('VERIFIER_SSF_EMAIL_ISSUER', url.optional()).describe(
        'The issuer (one of `issuers`) whose access tokens an `email` subject names: its tokens whose `email` is that address and whose `email_verified` is `true` are revoked. Unset: `email` subjects are acknowledged and ignored, as an address alone names no issuer.',
      ),
    })
      // The rules between the receiver's own settings.
      .check(
        rule<{
          transmitter?: string;
          audience?: string;
          pollEndpoint?: string;
          allowHttp: boolean;
        }>(
          ['transmitter', 'audience', 'pollEndpoint', 'allowHttp'],
          ({ transmitter, audience, pollEndpoint, allowHttp }, report) => {
            if (transmitter === undefined) {
              if (pollEndpoint !== undefined) report('pollEndpoint', 'needs a transmitter');
              return;
            }
            if (audience === undefined) report('audience', 'required with a transmitter');
            for (const [field, at] of Object.entries({ transmitter, pollEndpoint })) {
              const insecure = at === undefined ? undefined : insecureUrlProblem(at, allowHttp);
              if (insecure !== undefined) report(field, insecure);
            }
          },
        ),
      )
      .prefault({}),
  }).prefault({}),
}).check(...rootRules);

const issuerName = url.describe(
  'Exact `iss` value (RFC 7519 §4.1.1); also the base for OIDC discovery.',
);
const clientClaims = claimNames
  .optional()
  .describe('Claims tried in order for the client id answered in `X-Auth-Client`.');
const endpoint = url
  .optional()
  .describe('Introspection URL. Unset: found through OIDC discovery from `issuer`.');
const opaqueCacheTtl = duration
  .prefault('60s')
  .describe("Seconds a positive answer is reused (never past the token's `exp`).");
const allowHttp = offByDefault.describe(
  "Allow plain `http:` for this issuer's discovery, JWKS, introspection or tokeninfo URLs on a host that is not loopback (`localhost`, 127.0.0.0/8, `[::1]`). Off: such URLs are refused at start and at fetch time.",
);
const timeout = duration.optional().describe('Timeout of one introspection / tokeninfo request.');
/** How an opaque issuer's answers are fetched and reused. */
const opaqueAnswers = { cacheTtl: opaqueCacheTtl, timeout, allowHttp };

/** The rules an issuer's preset makes at start (presets.ts), each at the field it is about. */
const presetRule = rule<Parameters<typeof checkPresetIssuer>[0]>(
  ['preset', 'type', 'issuer', 'audience'],
  (issuer, report) => checkPresetIssuer(issuer, report),
);

// What an IdP preset fills (presets.ts); the defaults are the `rfc9068` row's.
const presetName = oneOf(PRESET_NAMES, PRESET_NAMES.join(', '));
const preset = env('VERIFIER_PRESET', presetName.prefault('rfc9068')).describe(
  'The IdP whose tokens this issuer accepts (docs/connect-your-idp.md): `rfc9068`, `auth0`, `auth0-rfc9068`, `okta`, `entra`, `entra-v1`, `keycloak`, `cognito` or `google`. It fills the settings below that are not given explicitly.',
);
const scopeClaims = env('VERIFIER_SCOPE_CLAIMS', claimNames.prefault(['scope', 'scp'])).describe(
  'Claims holding the granted scopes, the first present one counting (a space-separated string or an array): `scope`, `scp`, Entra app-only `roles`.',
);
const audienceClaim = env(
  'VERIFIER_AUDIENCE_CLAIM',
  oneOf(['aud', 'client_id']).prefault('aud'),
).describe(
  '`aud`, or `client_id` for an IdP whose access tokens carry no audience (Cognito: `audience` is then the app client id).',
);
const requireClaims = env('VERIFIER_REQUIRE_CLAIMS', claimRules.prefault([])).describe(
  'Claims an access token of this IdP always has: `name` (present) or `name=value` (e.g. `token_use=access`), so its other tokens are refused.',
);
/** Where an issuer's access tokens say how the user signed in (step-up, decision/step-up.ts). */
const authenticationClaim = (variable: string, claim: string, what: string) =>
  env(variable, claimOrOff.prefault(claim)).describe(
    `Claim holding ${what}, read for policies with step-up requirements; \`off\` for an IdP whose access tokens do not carry it (a policy that needs it is then refused at start). The preset fills it.`,
  );
const acrClaim = authenticationClaim(
  'VERIFIER_ACR_CLAIM',
  'acr',
  "the authentication context class (a string, or an array such as Entra's `acrs`: any element counts)",
);
const amrClaim = authenticationClaim(
  'VERIFIER_AMR_CLAIM',
  'amr',
  'the authentication methods (an array of strings)',
);
const authTimeClaim = authenticationClaim(
  'VERIFIER_AUTH_TIME_CLAIM',
  'auth_time',
  'the time of the sign-in (epoch seconds)',
);
const refuseClaims = env('VERIFIER_REFUSE_CLAIMS', list().prefault([...ALWAYS_REFUSED])).describe(
  'Claims an access token never has: their presence marks an ID token (`nonce`, `at_hash`), a logout or security event token (`events`). Replaces the list when set.',
);

/** An issuer of JWT access tokens, verified locally against its JWKS. */
const jwtIssuer = section({
  type: z.literal('jwt').default('jwt'),
  issuer: env('VERIFIER_ISSUER', issuerName),
  audience: env('VERIFIER_AUDIENCE', text).describe(
    '`aud` (string or array) must contain it, so an ID token for the SPA is not an access token.',
  ),
  jwksUri: env('VERIFIER_JWKS_URI', url.optional()).describe(
    'JWKS URL. Unset: `jwks_uri` from `${issuer}/.well-known/openid-configuration` (whose `issuer` must match).',
  ),
  algorithms: env(
    'VERIFIER_ALGORITHMS',
    algorithms.prefault(['RS256', 'ES256', 'PS256', 'EdDSA']),
  ).describe(
    'Allowed `alg` values; asymmetric only (RS*, PS*, ES*, EdDSA). `none` and HS* are refused at start.',
  ),
  clockTolerance: env('VERIFIER_CLOCK_TOLERANCE', clockTolerance.prefault('30s')).describe(
    'Leeway for `exp`, `nbf` and `iat`, at most `5m`: a token is accepted this long after its `exp`.',
  ),
  requireTyp: env('VERIFIER_REQUIRE_TYP', typ.prefault('at+jwt')).describe(
    'RFC 9068 §2.1: the `typ` header every token must carry (`application/` prefix allowed), so an ID token or another JWT cannot pass as an access token. `off` for an issuer that does not type its access tokens.',
  ),
  maxTokenAge: env('VERIFIER_MAX_TOKEN_AGE', positive.prefault('24h')).describe(
    'Longest lifetime accepted: `exp` may be at most this far after `iat` (when present) and after now (plus `clockTolerance`). A token valid for years is refused.',
  ),
  allowHttp: env('VERIFIER_ALLOW_HTTP', allowHttp),
  clientClaims,
  preset,
  scopeClaims,
  audienceClaim,
  requireClaims,
  refuseClaims,
  acrClaim,
  amrClaim,
  authTimeClaim,
  logoutAudiences: env('VERIFIER_LOGOUT_AUDIENCES', list().prefault([])).describe(
    "Client ids (the SPA's) whose back-channel logout tokens from this issuer are accepted at `POST /backchannel-logout` (OIDC Back-Channel Logout 1.0). Empty: this issuer's logout tokens are refused.",
  ),
}).check(firstFetchRule('jwksUri'), presetRule);

/** An issuer of opaque tokens, checked through RFC 7662 token introspection. */
const introspectionIssuer = section({
  type: z.literal('introspection'),
  issuer: issuerName,
  endpoint,
  clientId: text.describe('Client id for `client_secret_basic` at the endpoint.'),
  clientSecret: secret().describe(
    'Client secret for `client_secret_basic`: a string, `{ "file": "/path" }` (e.g. a mounted Kubernetes Secret; one trailing newline dropped) or `{ "env": "NAME" }` (a variable outside the `VERIFIER_` prefix), read once at start.',
  ),
  audience: text.describe(
    "This API's identifier: the introspection answer's `aud` must contain it, so an active token issued for another API is refused (the verifier refuses to start without it).",
  ),
  ...opaqueAnswers,
  clientClaims,
}).check(firstFetchRule('endpoint'));

/**
 * An issuer of opaque tokens only it can check, at a tokeninfo endpoint that is not RFC 7662
 * (Google, `"preset": "google"`): the answer names the client (`aud`/`azp`) and the scopes.
 */
const tokeninfoIssuer = section({
  type: z.literal('tokeninfo'),
  issuer: issuerName,
  audience: text.describe(
    "The OAuth client id the tokens must be issued to (the answer's `aud`): tokens of every other app of the IdP are refused.",
  ),
  endpoint: env(
    'VERIFIER_TOKENINFO_URI',
    url.prefault('https://oauth2.googleapis.com/tokeninfo'),
  ).describe(
    'Tokeninfo URL; the token is POSTed as the form field `access_token`, never put in a URL.',
  ),
  ...opaqueAnswers,
  clientClaims,
  preset,
  scopeClaims,
  requireClaims,
  refuseClaims,
  acrClaim,
  amrClaim,
  authTimeClaim,
}).check(firstFetchRule('endpoint'), presetRule);

/** One issuer by its `type` (default `jwt`), read with its preset row laid under it (presets.ts). */
export const issuerSchema = z.discriminatedUnion(
  'type',
  [jwtIssuer, introspectionIssuer, tokeninfoIssuer],
  {
    error: (issue: { code: string }) =>
      issue.code === 'invalid_type'
        ? 'expected an object'
        : 'expected "jwt", "introspection" or "tokeninfo"',
  },
);

/** A named policy; whether its issuers are configured is a rule of the document (rules.ts). */
export const policySchema = section({
  issuers: list('issuer').describe(
    '`iss` values this policy accepts (checked before any key fetch); each is a configured issuer, at most one of them opaque.',
  ),
  scopes: env('VERIFIER_REQUIRED_SCOPES', list().prefault([])).describe(
    'Scopes (`scope` string or `scp` array) that must all be granted; a missing one gives 403.',
  ),
  clients: env('VERIFIER_ALLOWED_CLIENTS', list('client').optional()).describe(
    "Client ids (as the issuer's `clientClaims` name them: `azp`, `client_id`…) whose tokens this policy serves; a valid token of any other client gets 403 `client_not_allowed`. Unset: every client of the policy's issuers, which get the `default` secret set unless a set is named for them. An id here allows that client of each of the policy's issuers.",
  ),
  cloudfront: cloudFrontSection.optional(),
  mint: mintSection.optional(),
  dpop: env('VERIFIER_DPOP', oneOf(['off', 'allowed', 'required']).prefault('off')).describe(
    'DPoP (RFC 9449): `off` reads Bearer tokens only; `allowed` also takes DPoP-bound tokens with a proof per request; `required` takes only those. A bound token is never accepted as Bearer.',
  ),
  acrValues: env('VERIFIER_ACR_VALUES', list('acr value').optional()).describe(
    "Step-up (RFC 9470): the authentication context classes this policy accepts, in order of preference; a token whose `acr` (the issuer's `acrClaim`) is none of them gets 401 `insufficient_user_authentication` with these as `acr_values`. Unset: any.",
  ),
  maxAge: env('VERIFIER_MAX_AGE', wholeSeconds.optional()).describe(
    "Step-up (RFC 9470): how long ago the user may have signed in (`auth_time`), in whole seconds: a sign-in passes while `auth_time` ≤ now and now − `auth_time` ≤ this + the issuer's `clockTolerance` (no tolerance on the future side, where it would stretch the window); an older or missing `auth_time` gets 401 `insufficient_user_authentication` with `max_age`. No allow is reused, at the edge or in the verifier, past `auth_time` plus this. Unset: any.",
  ),
  amrValues: env('VERIFIER_AMR_VALUES', list('amr value').optional()).describe(
    'Step-up: authentication methods (`amr`, RFC 8176 values such as `mfa`, `hwk`) the token must all list; a missing one gets 401 `insufficient_user_authentication` (RFC 9470 has no challenge parameter for methods: pair them with an `acrValues` the IdP maps to them). Unset: any.',
  ),
  revocation: env(
    'VERIFIER_REVOCATION',
    oneOf(['checked', 'required']).prefault('checked'),
  ).describe(
    'With a revocation receiver on, every token is checked against the revocation store. When the shared store is unreachable, `checked` serves (and counts it in `verifier_revocation_unchecked_total`) and `required` refuses (401 `revocation_unavailable`).',
  ),
});

/**
 * The JSON file: what verifier/config.schema.json publishes, with the rules of the top level and
 * those between its sections. The loader checks it with issuers and policies taken as they come,
 * then each of them on its own.
 */
export function documentSchema<I extends z.ZodType, P extends z.ZodType>(issuer: I, policy: P) {
  return section({
    $schema: z.string().optional(),
    ...rootSchema.shape,
    issuers: z
      .array(issuer, says('an array of issuers', 'at least one issuer is required'))
      .min(1, 'at least one issuer is required'),
    policies: z
      .record(z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/), policy, {
        error: (issue) =>
          issue.code === 'invalid_key'
            ? 'policy names use A-Z a-z 0-9 _ . - only'
            : says('an object of named policies', 'at least one policy is required').error(issue),
      })
      .refine((named) => Object.keys(named).length > 0, 'at least one policy is required'),
  }).check(...rootRules, ...documentRules, stepUpRule(issuerSchema, policySchema));
}

/** The policy a /verify without `X-SG-Policy` asks for. */
export const DEFAULT_POLICY = 'default';

/** An issuer that leaves out a setting named here takes the top-level one named beside it. */
export const INHERITED = { clientClaims: 'clientClaims', timeout: 'fetchTimeout' } as const;
type Inherit<T> = T & {
  readonly [K in keyof T & keyof typeof INHERITED]-?: Exclude<T[K], undefined>;
};

/** The top-level settings as the verifier reads them: loaded. */
export type RootSettings = Loaded<z.output<typeof rootSchema>>;
export type JwtIssuer = Inherit<Loaded<z.output<typeof jwtIssuer>>>;
export type IntrospectionIssuer = Inherit<Loaded<z.output<typeof introspectionIssuer>>>;
export type TokeninfoIssuer = Inherit<Loaded<z.output<typeof tokeninfoIssuer>>>;
export type IssuerConfig = JwtIssuer | IntrospectionIssuer | TokeninfoIssuer;
export type PolicyConfig = { readonly name: string } & Loaded<z.output<typeof policySchema>>;
export type DpopMode = PolicyConfig['dpop'];
export type DpopConfig = RootSettings['dpop'];
export type { Listen };

export type VerifierConfig = RootSettings & {
  readonly issuers: ReadonlyMap<string, IssuerConfig>;
  readonly policies: ReadonlyMap<string, PolicyConfig>;
};

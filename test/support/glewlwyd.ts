// Glewlwyd (Debian's `glewlwyd` package, an OpenID provider written in C that shares no code with
// anything the gate uses) as a real IdP for the suites: sqlite on loopback, configured through its
// own admin API as an operator would. Its OIDC plugin issues RFC 9068 JWT access tokens with
// `aud` = the RFC 8707 `resource`, PKCE, DPoP, client credentials and back-channel logout.
// Its quirks are handled here, never in the product (/usr/share/doc/glewlwyd/OIDC.md, API.md):
// - no `use_secure_connection` line at all for plain HTTP (2.7.5 refuses to start with one);
// - the package ships its web app's `config.json` as a directory, so the login page is served
//   from a scratch copy with that file in place;
// - confidential clients need `token_endpoint_auth_method`, or every client authentication fails;
// - `backchannel_logout_session_required` and `post_logout_redirect_uri` are strings to its
//   client API, and its end-session page needs the latter registered.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { execFileSync } from 'node:child_process';
import { freePort } from '../../stack/ports.js';
import { dpopProof } from './oidc-provider.js';
import type * as DPoP from 'dpop';

const WEBAPP = '/usr/share/glewlwyd/webapp';
const INIT_SQL = '/usr/share/doc/glewlwyd/database/init.sqlite3.sql.gz';
const MODULES = '/usr/lib/glewlwyd';
const PLUGIN = 'oidc';
const RETYPE_PASSWORD = 'retype';

export interface GlewlwydOptions {
  /** The RFC 8707 resource the gate's API is known by: the `aud` of its access tokens. */
  readonly resource?: string;
  /** The SPA's redirect URI (the gate's origin + `/`). */
  readonly redirectUri?: string;
  /** Registers the SPA's client for back-channel logout at this URI. */
  readonly backchannelLogoutUri?: string;
  /** The SPA's client id (public, code + PKCE). */
  readonly spaClient?: string;
  /** A confidential client for client credentials; its secret is `${id}-secret`. */
  readonly serviceClient?: string;
  /**
   * A scope guarded by a second authentication scheme (Glewlwyd's "retype-password"): the
   * sign-in that requests it asks for the password again (SCOPE.md, "Additional authentication
   * schemes"). The SPA's client and the user may request it.
   */
  readonly guardedScope?: string;
}

export interface GlewlwydHarness {
  readonly issuer: string;
  readonly jwksUri: string;
  readonly tokenEndpoint: string;
  readonly resource: string;
  readonly spaClient: string;
  readonly serviceClient: string;
  /** The user who signs in at the login page. */
  readonly user: { readonly username: string; readonly password: string; readonly name: string };
  /** The scope guarded by the retype-password scheme, when one was asked for. */
  readonly guardedScope: string | undefined;
  /** A client-credentials token for the service client (with `dpop`: bound to that key). */
  clientCredentials(options?: { scope?: string; dpop?: DPoP.KeyPair }): Promise<string>;
  /** Glewlwyd's own log so far (start-up, errors). */
  log(): string;
  close(): Promise<void>;
}

const DEFAULTS = {
  resource: 'https://api.secret-gate.test',
  spaClient: 'spa-demo',
  serviceClient: 'partner-app',
} as const;

/** Starts Glewlwyd on a free loopback port with a fresh sqlite database and configures it. */
export async function startGlewlwyd(options: GlewlwydOptions = {}): Promise<GlewlwydHarness> {
  const resource = options.resource ?? DEFAULTS.resource;
  const spaClient = options.spaClient ?? DEFAULTS.spaClient;
  const serviceClient = options.serviceClient ?? DEFAULTS.serviceClient;
  const scratch = mkdtempSync(join(tmpdir(), 'sg-glewlwyd-'));
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const issuer = `${origin}/api/${PLUGIN}`;

  const database = join(scratch, 'glewlwyd.db');
  execFileSync('sqlite3', [database], { input: gunzipSync(readFileSync(INIT_SQL)) });
  const webapp = webAppCopy(join(scratch, 'webapp'));
  const configFile = join(scratch, 'glewlwyd.conf');
  writeFileSync(configFile, glewlwydConf({ port, origin, database, webapp }));

  let output = '';
  const child: ChildProcess = spawn('glewlwyd', [`--config-file=${configFile}`], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(scratch, { recursive: true, force: true });
  };

  try {
    await waitUntilServing(`${origin}/config/`, () => output, child);
    const admin = await signIn(origin, 'admin', 'password');
    const api = adminApi(origin, admin);
    await api('POST', '/scope/', {
      name: 'secrets:read',
      display_name: 'Secrets',
      description: 'Read the secret set of the gate',
      password_required: false,
      scheme: {},
    });
    const guardedScope = options.guardedScope;
    const extraScopes = guardedScope === undefined ? [] : [guardedScope];
    if (guardedScope !== undefined) {
      // A short-lived password re-entry: a sign-in that requests the scope asks for it even
      // when the session already holds the password.
      await api('POST', '/mod/scheme/', {
        module: 'retype-password',
        name: RETYPE_PASSWORD,
        display_name: 'Retype password',
        expiration: 600,
        max_use: 0,
        allow_user_register: false,
        enabled: true,
        parameters: {},
      });
      await api('POST', '/scope/', {
        name: guardedScope,
        display_name: 'Payments',
        description: 'Read the payments set of the gate',
        password_required: true,
        password_max_age: 0,
        scheme: {
          retype: [
            {
              scheme_type: 'retype-password',
              scheme_name: RETYPE_PASSWORD,
              scheme_display_name: 'Retype password',
            },
          ],
        },
      });
    }
    await api('POST', '/mod/plugin/', {
      module: 'oidc',
      name: PLUGIN,
      display_name: 'OpenID Connect',
      enabled: true,
      parameters: pluginParameters({ issuer, resource, extraScopes }),
    });
    await api('POST', '/client/', {
      client_id: spaClient,
      name: 'The SPA',
      enabled: true,
      confidential: false,
      redirect_uri: [options.redirectUri ?? 'http://127.0.0.1/'],
      post_logout_redirect_uri: options.redirectUri ?? 'http://127.0.0.1/',
      authorization_type: ['code', 'refresh_token'],
      scope: ['openid', 'secrets:read', ...extraScopes],
      resource: [resource],
      ...(options.backchannelLogoutUri === undefined
        ? {}
        : {
            backchannel_logout_uri: options.backchannelLogoutUri,
            backchannel_logout_session_required: 'false',
          }),
    });
    await api('POST', '/client/', {
      client_id: serviceClient,
      name: 'A partner service',
      enabled: true,
      confidential: true,
      password: `${serviceClient}-secret`,
      token_endpoint_auth_method: ['client_secret_basic'],
      authorization_type: ['client_credentials'],
      scope: ['secrets:read'],
      redirect_uri: [],
      resource: [resource],
    });
    const user = { username: 'dana', password: 'dana-password-1', name: 'Dana Glewlwyd' };
    await api('POST', '/user/', {
      username: user.username,
      name: user.name,
      email: 'dana@example.test',
      enabled: true,
      password: user.password,
      scope: ['openid', 'secrets:read', 'g_profile', ...extraScopes],
    });
    // The plugin answers discovery once its instance is loaded.
    await waitUntilServing(`${issuer}/.well-known/openid-configuration`, () => output, child);

    return {
      issuer,
      jwksUri: `${issuer}/jwks`,
      tokenEndpoint: `${issuer}/token`,
      resource,
      spaClient,
      serviceClient,
      user,
      guardedScope,
      async clientCredentials({ scope = 'secrets:read', dpop } = {}) {
        const headers: Record<string, string> = {
          authorization: `Basic ${Buffer.from(`${serviceClient}:${serviceClient}-secret`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        };
        if (dpop !== undefined) headers.dpop = await dpopProof(dpop, `${issuer}/token`, 'POST');
        const response = await fetch(`${issuer}/token`, {
          method: 'POST',
          headers,
          body: new URLSearchParams({ grant_type: 'client_credentials', scope, resource }),
          signal: AbortSignal.timeout(10_000),
        });
        const text = await response.text();
        const body = (text === '' ? {} : JSON.parse(text)) as { access_token?: string };
        if (!response.ok || body.access_token === undefined)
          throw new Error(`glewlwyd token: ${response.status} ${text}`);
        return body.access_token;
      },
      log: () => output,
      close,
    };
  } catch (error) {
    await close();
    throw new Error(`${(error as Error).message}\n--- glewlwyd log ---\n${output}`, {
      cause: error,
    });
  }
}

/**
 * The package's web app with its `config.json` as a file (Debian ships it as a directory), copied
 * (its static file server does not follow symbolic links).
 */
function webAppCopy(into: string): string {
  // Each link resolved by hand: `cpSync`'s `dereference` keeps links inside a tree on Node 22.
  const copy = (from: string, to: string): void => {
    if (!statSync(from).isDirectory()) return copyFileSync(realpathSync(from), to);
    mkdirSync(to, { recursive: true });
    for (const name of readdirSync(from)) copy(join(from, name), join(to, name));
  };
  copy(WEBAPP, into);
  rmSync(join(into, 'config.json'), { recursive: true });
  copyFileSync(join(WEBAPP, 'config.json', 'config.json'), join(into, 'config.json'));
  return into;
}

function glewlwydConf(at: { port: number; origin: string; database: string; webapp: string }) {
  const mime = [
    ['.html', 'text/html'],
    ['.css', 'text/css'],
    ['.js', 'application/javascript'],
    ['.json', 'application/json'],
    ['.png', 'image/png'],
    ['.svg', 'image/svg+xml'],
    ['.ico', 'image/x-icon'],
    ['.woff', 'font/woff'],
    ['.woff2', 'font/woff2'],
    ['.ttf', 'font/ttf'],
  ]
    .map(([extension, type]) => `{ extension = "${extension}" mime_type = "${type}" compress = 0 }`)
    .join(',\n  ');
  return `port=${at.port}
bind_address="127.0.0.1"
external_url="${at.origin}"
login_url="login.html"
api_prefix="api"
static_files_path="${at.webapp}/"
allow_origin="*"
allow_methods="GET, POST, PUT, DELETE, OPTIONS"
allow_headers="Origin, X-Requested-With, Content-Type, Accept, Bearer, Authorization, DPoP"
expose_headers="Content-Encoding, Authorization, DPoP-Nonce, WWW-Authenticate"
log_mode="console"
log_level="WARNING"
cookie_domain=""
cookie_secure=0
cookie_same_site="lax"
session_expiration=3600
session_key="GLEWLWYD2_SESSION_ID"
admin_session_authentication="cookie"
profile_session_authentication="cookie"
allow_multiple_user_per_session=false
login_api_enabled=true
add_x_frame_option_header_deny=true
max_post_size=16778240
admin_scope="g_admin"
profile_scope="g_profile"
user_module_path="${MODULES}/user"
user_middleware_module_path="${MODULES}/user_middleware"
client_module_path="${MODULES}/client"
user_auth_scheme_module_path="${MODULES}/scheme"
plugin_module_path="${MODULES}/plugin"
hash_algorithm="SHA512"
database = { type = "sqlite3" path = "${at.database}" };
static_files_mime_types = (
  ${mime}
);
`;
}

/** RS256 first (the plugin's default), ES256 beside it. */
function signingKeys(): { keys: Array<Record<string, unknown>> } {
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
  return {
    keys: [
      { ...rsa.export({ format: 'jwk' }), kid: `rsa-${randomUUID()}`, alg: 'RS256', use: 'sig' },
      { ...ec.export({ format: 'jwk' }), kid: `ec-${randomUUID()}`, alg: 'ES256', use: 'sig' },
    ],
  };
}

function pluginParameters(at: { issuer: string; resource: string; extraScopes: string[] }) {
  return {
    iss: at.issuer,
    'jwt-type': 'rsa',
    'jwt-key-size': '256',
    'jwks-private': JSON.stringify(signingKeys()),
    'jwks-show': true,
    'default-kid': '',
    'access-token-duration': 300,
    'refresh-token-duration': 3600,
    'code-duration': 600,
    'refresh-token-rolling': true,
    'allow-non-oidc': true,
    'auth-type-code-enabled': true,
    'auth-type-token-enabled': false,
    'auth-type-id-token-enabled': false,
    'auth-type-none-enabled': false,
    'auth-type-password-enabled': false,
    'auth-type-client-enabled': true,
    'auth-type-device-enabled': false,
    'auth-type-refresh-enabled': true,
    scope: [],
    'additional-parameters': [],
    claims: [],
    'name-claim': 'mandatory',
    'name-claim-scope': [],
    'email-claim': 'no',
    'scope-claim': 'no',
    'allowed-scope': ['openid', 'secrets:read', ...at.extraScopes],
    'secret-type': 'public',
    'pkce-allowed': true,
    'pkce-method-plain-allowed': false,
    'pkce-required': false,
    'pkce-required-public-client': true,
    'session-management-allowed': true,
    'session-cookie-name': 'GLEWLWYD2_OIDC_SID',
    'session-cookie-expiration': 3600,
    'front-channel-logout-allowed': true,
    'back-channel-logout-allowed': true,
    'oauth-dpop-allowed': true,
    'oauth-dpop-iat-duration': 60,
    'oauth-dpop-iat-gap-duration': 0,
    'oauth-dpop-nonce-mandatory': false,
    'resource-allowed': true,
    'resource-scope': {
      'secrets:read': [at.resource],
      openid: [at.resource],
      ...Object.fromEntries(at.extraScopes.map((scope) => [scope, [at.resource]])),
    },
    'resource-client-property': 'resource',
    'resource-scope-and-client-property': false,
    'request-parameter-allow': false,
    'introspection-revocation-allowed': false,
    'register-client-allowed': false,
  };
}

async function waitUntilServing(url: string, output: () => string, child: ChildProcess) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`glewlwyd exited with ${child.exitCode}`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`glewlwyd did not answer ${url}\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Password sign-in at `POST /api/auth/`; the session cookie as a Cookie header. */
async function signIn(origin: string, username: string, password: string) {
  const response = await fetch(`${origin}/api/auth/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username, password }),
  });
  if (!response.ok) throw new Error(`glewlwyd sign-in of ${username}: ${response.status}`);
  return response.headers
    .getSetCookie()
    .map((cookie) => cookie.split(';')[0])
    .join('; ');
}

function adminApi(origin: string, cookie: string) {
  return async (method: string, path: string, body: unknown) => {
    const response = await fetch(`${origin}/api${path}`, {
      method,
      headers: { 'content-type': 'application/json', cookie },
      body: JSON.stringify(body),
    });
    if (!response.ok)
      throw new Error(`glewlwyd ${method} ${path}: ${response.status} ${await response.text()}`);
  };
}

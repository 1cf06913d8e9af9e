// The SG_ variables the NGINX templates and nginx/bin/sg-render use: the one definition of each
// setting (meaning, image value, local default) for the local runner, docker compose and the
// docs (stack/nginx/reference.ts renders docs/configuration.md's table from it).
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { DEFAULT_DPOP_ALGORITHMS } from '../../verifier/src/config/model.js';

export type NginxVariableName =
  | 'SG_LISTEN'
  | 'SG_VERIFIER_ADDR'
  | 'SG_SPA_ROOT'
  | 'SG_SECRETS_FILE'
  | 'SG_ACCESS_LOG_OPTIONS'
  | 'SG_WORKER_PROCESSES'
  | 'SG_WORKER_CONNECTIONS'
  | 'SG_OIDC_ISSUER'
  | 'SG_OIDC_CLIENT_ID'
  | 'SG_OIDC_SCOPE'
  | 'SG_OIDC_AUDIENCE'
  | 'SG_OIDC_AUDIENCE_PARAMETERS'
  | 'SG_CSP_CONNECT_SRC'
  | 'SG_CSP_IMG_SRC'
  | 'SG_CLOUDFRONT_IMAGE_URL'
  | 'SG_SPA_SECRET_SETS'
  | 'SG_CLOUDFRONT_COOKIES'
  | 'SG_SECRET_RATE'
  | 'SG_SECRET_BURST'
  | 'SG_SECRETS_ISSUER'
  | 'SG_MEMORY_DIR'
  | 'SG_EDGE_CACHE'
  | 'SG_REAL_IP_FROM'
  | 'SG_REAL_IP_HEADER'
  | 'SG_EXTERNAL_ORIGIN'
  | 'SG_DPOP_ALGORITHMS'
  | 'SG_DPOP_BOUND_TOKENS_REQUIRED';

export type NginxEnv = Record<NginxVariableName, string>;

export interface NginxVariable {
  readonly name: NginxVariableName;
  /** What it sets, for the README table. */
  readonly description: string;
  /** Its value in the project's NGINX image (nginx/Dockerfile), as docker compose sets it. */
  readonly docker: string;
  /**
   * localNginxEnv()'s default, for the docs: the value itself (a path relative to this
   * repository), or in parentheses how it is derived.
   */
  readonly local: string;
}

/** The verifier's default DPoP algorithms, as the metadata lists them. */
const DPOP_ALGORITHMS = DEFAULT_DPOP_ALGORITHMS.join(' ');

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Where the templates, njs modules and dev secrets of this repository live. */
export const nginxPaths = Object.freeze({
  templatesDir: path.join(repoRoot, 'nginx', 'templates'),
  njsDir: path.join(repoRoot, 'nginx', 'njs'),
  devSecretsFile: path.join(repoRoot, 'nginx', 'secrets.dev.json'),
  spaRoot: path.join(repoRoot, 'spa', 'dist'),
});

/** Every SG_ variable, in the order of the README table. */
export const nginxVariables: readonly NginxVariable[] = Object.freeze([
  {
    name: 'SG_LISTEN',
    local: '127.0.0.1:8080',
    docker: '8080',
    description: '`listen` address of the site: `host:port` or a port.',
  },
  {
    name: 'SG_VERIFIER_ADDR',
    local: '127.0.0.1:8090',
    docker: 'verifier:8090',
    description: 'The verifier: `host:port` or `unix:/path.sock` (an upstream `server`).',
  },
  {
    name: 'SG_SPA_ROOT',
    local: 'spa/dist',
    docker: '/usr/share/nginx/html',
    description: 'Directory of the built SPA (`spa/dist`).',
  },
  {
    name: 'SG_SECRETS_FILE',
    local: 'nginx/secrets.dev.json',
    docker: '/etc/secret-gate/secrets.json',
    description:
      'Secrets file (`default`, `clients`, `issuers`). Must exist; `SECRETS` replaces its content when set. Read only by the secret-set watcher (`nginx/bin/sg-secret-sets`), which writes one small file per set to `SG_MEMORY_DIR` for NGINX to serve: a rotated file (replaced, edited in place, a Kubernetes `..data` swap) is served within 2 s, with no reload.',
  },
  {
    name: 'SG_ACCESS_LOG_OPTIONS',
    local: '',
    docker: 'buffer=64k flush=1s',
    description:
      'Extra `access_log` parameters. Buffered in the image (one write per 64 KiB, at most 1 s late); unbuffered locally so a line is there as soon as the answer is.',
  },
  {
    name: 'SG_WORKER_PROCESSES',
    local: 'auto',
    docker: 'auto',
    description: '`worker_processes`.',
  },
  {
    name: 'SG_WORKER_CONNECTIONS',
    local: '4096',
    docker: '4096',
    description: '`worker_connections`.',
  },
  {
    name: 'SG_OIDC_ISSUER',
    local: 'http://127.0.0.1:8081',
    docker: 'http://localhost:8081',
    description: '`issuer` in `/config.json`.',
  },
  {
    name: 'SG_OIDC_CLIENT_ID',
    local: 'spa-demo',
    docker: 'spa-demo',
    description: '`clientId` in `/config.json`.',
  },
  {
    name: 'SG_OIDC_SCOPE',
    local: 'openid secrets:read',
    docker: 'openid secrets:read',
    description: '`scope` in `/config.json`.',
  },
  {
    name: 'SG_OIDC_AUDIENCE',
    local: 'secret-gate-api',
    docker: 'secret-gate-api',
    description: '`audience` in `/config.json`.',
  },
  {
    name: 'SG_OIDC_AUDIENCE_PARAMETERS',
    local: 'resource',
    docker: 'resource',
    description:
      'How the SPA names the API at sign-in (`audienceParameters` in `/config.json`), space-separated: `resource` (RFC 8707 resource indicator, the standard), `audience` (Auth0); empty sends neither (an IdP whose audience comes from the scope or a mapper). `npm start -- --preset` picks it (docs/connect-your-idp.md).',
  },
  {
    name: 'SG_CSP_CONNECT_SRC',
    local: "(the issuer's origin)",
    docker: 'http://localhost:8081',
    description:
      "Origins added to CSP `connect-src` after `'self'`: at least the issuer's origin (token endpoint).",
  },
  {
    name: 'SG_CSP_IMG_SRC',
    local: '',
    docker: '',
    description: "Origins added to CSP `img-src` after `'self' data:` (an asset CDN).",
  },
  {
    name: 'SG_CLOUDFRONT_IMAGE_URL',
    local: '',
    docker: '',
    description:
      'A private CloudFront image the SPA shows once the signed cookies are set (`cloudfront.imageUrl` in `/config.json`); empty hides that panel. Add its origin to `SG_CSP_IMG_SRC`.',
  },
  {
    name: 'SG_SPA_SECRET_SETS',
    local: '',
    docker: '',
    description:
      'Named secret sets the SPA offers besides the default one (`secretSets` in `/config.json`), space-separated, e.g. `payments`: each is fetched from `/secret/<name>`, and a step-up challenge there (RFC 9470) sends the person to sign in again with its `acr_values`/`max_age`. Empty: the default set only.',
  },
  {
    name: 'SG_CLOUDFRONT_COOKIES',
    local: 'off',
    docker: 'off',
    description:
      "`on`: the verifier's `X-Auth-CF-*` values (complete `Set-Cookie` lines) are added to the allowed `/secret` answer; `off`: they are not even looked up. Turn it on with a `cloudfront` block in the verifier's policy.",
  },
  {
    name: 'SG_SECRET_RATE',
    local: '5000r/s',
    docker: '5000r/s',
    description:
      'Outer per-client-address `limit_req` rate on every `/secret` request (`Nr/s` or `Nr/m`). Generous on purpose: edge-cache hits cost the verifier nothing, and many users may share one address.',
  },
  {
    name: 'SG_SECRET_BURST',
    local: '10000',
    docker: '10000',
    description:
      '`burst` of that limit (served at once, `nodelay`). Keep it large: `limit_req` counts in milliseconds.',
  },
  {
    name: 'SG_EDGE_CACHE',
    local: 'sg_decisions',
    docker: 'sg_decisions',
    description:
      "`sg_decisions`: NGINX reuses the verifier's answers for `X-Accel-Expires` seconds (the verifier's `VERIFIER_EDGE_CACHE_TTL`, never past `exp`); `off`: every `/secret` asks the verifier.",
  },
  {
    name: 'SG_MEMORY_DIR',
    local: '(a fresh directory in /dev/shm)',
    docker: '/dev/shm',
    description:
      "Memory-backed directory (tmpfs, a `medium: Memory` emptyDir) for the edge cache, whose files hold tokens, and the per-set secret files. Must be NGINX's alone: the local runner creates a fresh one (`mkdir` 0700, owned by the workers' user) and refuses one it did not create.",
  },
  {
    name: 'SG_SECRETS_ISSUER',
    local: '(the issuer)',
    docker: 'http://localhost:8081',
    description:
      "The issuer (`iss`) the secrets file's flat `clients` map belongs to; sets under `issuers` name their own. Empty with a non-empty `clients` map: ambiguous, refused (the local runner stops at start; the image answers 503 and logs why). Locally defaults to the issuer.",
  },
  {
    name: 'SG_REAL_IP_FROM',
    local: 'unix:',
    docker: 'unix:',
    description:
      "`set_real_ip_from`: the one CIDR of the proxies whose `SG_REAL_IP_HEADER` is trusted for the client address (e.g. the ingress controllers' pod range). `unix:` trusts no TCP peer.",
  },
  {
    name: 'SG_REAL_IP_HEADER',
    local: 'X-Forwarded-For',
    docker: 'X-Forwarded-For',
    description: '`real_ip_header`: where those proxies put the client address.',
  },
  {
    name: 'SG_EXTERNAL_ORIGIN',
    local: '(http:// + SG_LISTEN)',
    docker: 'http://localhost:8080',
    description:
      'The origin browsers use for the gate (`https://gate.example.com`), sent to the verifier so it can rebuild the URL a DPoP proof must name (`htu`); never taken from a request header. Also the `resource` of the Protected Resource Metadata at `/.well-known/oauth-protected-resource` (RFC 9728), whose URL the verifier puts in every challenge (`VERIFIER_RESOURCE_METADATA_URL`).',
  },
  {
    name: 'SG_DPOP_ALGORITHMS',
    local: DPOP_ALGORITHMS,
    docker: DPOP_ALGORITHMS,
    description:
      "`dpop_signing_alg_values_supported` of the Protected Resource Metadata: the verifier's `VERIFIER_DPOP_ALGORITHMS`, space-separated; empty leaves the member out (no policy takes DPoP).",
  },
  {
    name: 'SG_DPOP_BOUND_TOKENS_REQUIRED',
    local: 'false',
    docker: 'false',
    description:
      '`dpop_bound_access_tokens_required` of the Protected Resource Metadata: `true` when every policy NGINX serves has `dpop: required`.',
  },
] satisfies NginxVariable[]);

export interface LocalNginxOptions {
  /** The prefix directory (`nginx -p`): nginx.conf, pid, temp and logs all live inside it. */
  readonly prefix: string;
  readonly listen?: string;
  readonly verifierAddr?: string;
  readonly spaRoot?: string;
  readonly secretsFile?: string;
  readonly oidcIssuer?: string;
  readonly oidcClientId?: string;
  readonly oidcScope?: string;
  readonly oidcAudience?: string;
  /** `resource`, `audience`, both or neither (SG_OIDC_AUDIENCE_PARAMETERS). */
  readonly oidcAudienceParameters?: string;
  /** Defaults to the issuer's origin. */
  readonly cspConnectSrc?: string;
  readonly cspImgSrc?: string;
  readonly cloudFrontImageUrl?: string;
  /** Named sets the SPA offers (SG_SPA_SECRET_SETS), space-separated. */
  readonly spaSecretSets?: string;
  /** Adds the verifier's CloudFront cookies to /secret (default off). */
  readonly cloudFrontCookies?: 'on' | 'off';
  readonly secretRate?: string;
  readonly secretBurst?: number;
  /** Defaults to the issuer. */
  readonly secretsIssuer?: string;
  /** Defaults to a fresh name under /dev/shm (memory-backed), else inside the prefix. */
  readonly memoryDir?: string;
  readonly workerProcesses?: number | 'auto';
  readonly accessLogOptions?: string;
  /** Defaults to `http://` + the listen address (loopback when only a port is given). */
  readonly externalOrigin?: string;
}

/**
 * The SG_ values for a local prefix run (`nginx -p PREFIX -c PREFIX/nginx.conf`) with Debian's
 * packages, defaults matching docs/architecture.md (NGINX on 127.0.0.1:8080, verifier on :8090,
 * dev IdP on :8081).
 */
export function localNginxEnv(options: LocalNginxOptions): NginxEnv {
  const prefix = path.resolve(options.prefix);
  const issuer = options.oidcIssuer ?? 'http://127.0.0.1:8081';
  return {
    SG_LISTEN: options.listen ?? '127.0.0.1:8080',
    SG_VERIFIER_ADDR: options.verifierAddr ?? '127.0.0.1:8090',
    SG_SPA_ROOT: options.spaRoot ?? nginxPaths.spaRoot,
    SG_SECRETS_FILE: options.secretsFile ?? nginxPaths.devSecretsFile,
    SG_ACCESS_LOG_OPTIONS: options.accessLogOptions ?? '',
    SG_WORKER_PROCESSES: String(options.workerProcesses ?? 'auto'),
    SG_WORKER_CONNECTIONS: '4096',
    SG_OIDC_ISSUER: issuer,
    SG_OIDC_CLIENT_ID: options.oidcClientId ?? 'spa-demo',
    SG_OIDC_SCOPE: options.oidcScope ?? 'openid secrets:read',
    SG_OIDC_AUDIENCE: options.oidcAudience ?? 'secret-gate-api',
    SG_OIDC_AUDIENCE_PARAMETERS: options.oidcAudienceParameters ?? 'resource',
    SG_CSP_CONNECT_SRC: options.cspConnectSrc ?? new URL(issuer).origin,
    SG_CSP_IMG_SRC: options.cspImgSrc ?? '',
    SG_CLOUDFRONT_IMAGE_URL: options.cloudFrontImageUrl ?? '',
    SG_SPA_SECRET_SETS: options.spaSecretSets ?? '',
    SG_CLOUDFRONT_COOKIES: options.cloudFrontCookies ?? 'off',
    SG_SECRET_RATE: options.secretRate ?? '5000r/s',
    SG_SECRET_BURST: String(options.secretBurst ?? 10000),
    SG_EDGE_CACHE: 'sg_decisions',
    SG_MEMORY_DIR: options.memoryDir ?? localMemoryDir(prefix),
    SG_SECRETS_ISSUER: options.secretsIssuer ?? issuer,
    SG_REAL_IP_FROM: 'unix:',
    SG_REAL_IP_HEADER: 'X-Forwarded-For',
    SG_EXTERNAL_ORIGIN: options.externalOrigin ?? originOf(options.listen ?? '127.0.0.1:8080'),
    SG_DPOP_ALGORITHMS: DPOP_ALGORITHMS,
    SG_DPOP_BOUND_TOKENS_REQUIRED: 'false',
  };
}

/**
 * A memory-backed directory for one run (the edge cache's files hold tokens): a random name under
 * /dev/shm when the machine has it, else inside the prefix. Nobody else can guess it ahead of the
 * run, and renderNginxConfig creates it exclusively; whoever stops the run removes it
 * (stack/orchestrate.ts, local-nginx.ts).
 */
export function localMemoryDir(prefix: string): string {
  const own = `secret-gate-${randomBytes(8).toString('hex')}`;
  return existsSync('/dev/shm')
    ? path.join('/dev/shm', own)
    : path.join(path.resolve(prefix), 'memory');
}

function originOf(listen: string): string {
  return /^\d+$/.test(listen) ? `http://127.0.0.1:${listen}` : `http://${listen}`;
}

/** The SG_ values of the project's NGINX image, as docker compose sets them. */
export function dockerNginxEnv(): NginxEnv {
  return Object.fromEntries(nginxVariables.map((v) => [v.name, v.docker])) as NginxEnv;
}

/**
 * The authorization request parameters that make an IdP's `aud` the API, by verifier preset:
 * RFC 8707 `resource` for standard issuers; Auth0 reads only its own `audience`; Entra v2,
 * Okta's custom authorization servers, Keycloak (Audience mapper) and Cognito take the API from
 * the scope or the server's configuration and need neither (Entra v2 refuses `resource`).
 */
export function audienceParametersFor(preset: string | undefined): string {
  switch (preset ?? 'rfc9068') {
    case 'auth0':
    case 'auth0-rfc9068':
      return 'audience';
    case 'entra':
    case 'okta':
    case 'keycloak':
    case 'cognito':
    case 'google':
      return '';
    default:
      return 'resource';
  }
}

// The SG_ variables the NGINX templates and nginx/bin/sg-render use, read from their one home,
// nginx/settings.env (default and meaning of each), for the local runner, docker compose and the
// docs (stack/nginx/reference.ts renders docs/configuration.md's table from it). This file holds
// only what the local runner sets differently, and why.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { parseEnv } from 'node:util';
import { PAYMENTS_POLICY } from '../service-env.js';

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
  | 'SG_POLICY_FILE'
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
  | 'SG_DPOP_BOUND_TOKENS_REQUIRED'
  | 'SG_TRACE_CONTEXT'
  | 'SG_TRACE_SAMPLE_PERCENT'
  | 'SG_TRACE_TRUST_CLIENT_SAMPLED';

export type NginxEnv = Record<NginxVariableName, string>;

export interface NginxVariable {
  readonly name: NginxVariableName;
  /** What it sets: the comment lines above it in nginx/settings.env. */
  readonly description: string;
  /** Its default (nginx/settings.env): the image's, and any home's that does not set it. */
  readonly default: string;
  /**
   * localNginxEnv()'s value, for the docs: the value itself (a path relative to this
   * repository), or in parentheses how it is derived.
   */
  readonly local: string;
}

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Where the templates, njs modules, settings and dev secrets of this repository live. */
export const nginxPaths = Object.freeze({
  templatesDir: path.join(repoRoot, 'nginx', 'templates'),
  njsDir: path.join(repoRoot, 'nginx', 'njs'),
  settingsFile: path.join(repoRoot, 'nginx', 'settings.env'),
  devSecretsFile: path.join(repoRoot, 'nginx', 'secrets.dev.json'),
  spaRoot: path.join(repoRoot, 'spa', 'dist'),
});

/**
 * nginx/settings.env as written: each `SG_NAME=value` line (the value as a shell reads it, by
 * Node's dotenv parser) with the comment lines right above it.
 */
export function readNginxSettings(
  text = readFileSync(nginxPaths.settingsFile, 'utf8'),
): { name: string; value: string; description: string }[] {
  const settings: { name: string; value: string; description: string }[] = [];
  let comment: string[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('# ')) comment.push(line.slice(2));
    else if (/^SG_[A-Z0-9_]+=/.test(line)) {
      const [name = '', value = ''] = Object.entries(parseEnv(line))[0] ?? [];
      settings.push({ name, value, description: comment.join(' ') });
      comment = [];
    } else comment = [];
  }
  return settings;
}

// Loopback addresses of a local run (docs/architecture.md): NGINX, and the dev IdP of stack/.
const LOCAL_LISTEN = '127.0.0.1:8080';
const LOCAL_ISSUER = 'http://127.0.0.1:8081';
// Unbuffered, so a test or a developer sees a log line as soon as the answer.
const LOCAL_ACCESS_LOG_OPTIONS = '';

/** What a local run sets differently from the default, as the docs show it. */
const LOCAL: Partial<Record<NginxVariableName, string>> = {
  SG_LISTEN: LOCAL_LISTEN,
  SG_SPA_ROOT: 'spa/dist',
  SG_SECRETS_FILE: 'nginx/secrets.dev.json',
  SG_ACCESS_LOG_OPTIONS: LOCAL_ACCESS_LOG_OPTIONS,
  SG_OIDC_ISSUER: LOCAL_ISSUER,
  SG_CSP_CONNECT_SRC: "(the issuer's origin)",
  // Every named policy of the run (stack/verifier-settings.ts): the dev IdP's step-up one, or the
  // policy file's.
  SG_SPA_SECRET_SETS: `(every policy but \`secret\`: \`${PAYMENTS_POLICY}\` with the dev IdP, else the \`--config\` file's)`,
  // The runner merges the policies itself and writes SG_SPA_SECRET_SETS from them.
  SG_POLICY_FILE: '(empty: the runner writes `SG_SPA_SECRET_SETS`)',
  SG_DPOP_BOUND_TOKENS_REQUIRED: '(`true` when every policy has `dpop: required`)',
  SG_MEMORY_DIR: '(a fresh directory in /dev/shm)',
  SG_SECRETS_ISSUER: '(the issuer)',
  SG_EXTERNAL_ORIGIN: '(http:// + SG_LISTEN)',
};

/** Every SG_ variable, in the order of nginx/settings.env (and of the docs table). */
export const nginxVariables: readonly NginxVariable[] = Object.freeze(
  readNginxSettings().map(({ name, value, description }) => {
    const local = LOCAL[name as NginxVariableName] ?? value;
    return Object.freeze({ name: name as NginxVariableName, description, default: value, local });
  }),
);

/** The defaults of nginx/settings.env, by name. */
export function nginxDefaults(): NginxEnv {
  return Object.fromEntries(nginxVariables.map((v) => [v.name, v.default])) as NginxEnv;
}

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
  /** The verifier's policy file NGINX takes the named sets from (SG_POLICY_FILE) instead. */
  readonly policyFile?: string;
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
  /** W3C Trace Context at the edge (SG_TRACE_CONTEXT, default off). */
  readonly traceContext?: 'on' | 'off';
  /** Share of trace ids NGINX marks sampled, 0–100 (SG_TRACE_SAMPLE_PERCENT). */
  readonly traceSamplePercent?: number;
  /** Keep a client's sampled flag (SG_TRACE_TRUST_CLIENT_SAMPLED, default off). */
  readonly traceTrustClientSampled?: 'on' | 'off';
}

/**
 * The SG_ values for a local prefix run (`nginx -p PREFIX -c PREFIX/nginx.conf`) with Debian's
 * packages, defaults matching docs/architecture.md (NGINX on 127.0.0.1:8080, verifier on :8090,
 * dev IdP on :8081).
 */
export function localNginxEnv(options: LocalNginxOptions): NginxEnv {
  const prefix = path.resolve(options.prefix);
  const defaults = nginxDefaults();
  const listen = options.listen ?? LOCAL_LISTEN;
  const issuer = options.oidcIssuer ?? LOCAL_ISSUER;
  const given = (value: string | number | undefined, fallback: string) =>
    value === undefined ? fallback : String(value);
  return {
    ...defaults,
    SG_LISTEN: listen,
    SG_VERIFIER_ADDR: given(options.verifierAddr, defaults.SG_VERIFIER_ADDR),
    SG_SPA_ROOT: options.spaRoot ?? nginxPaths.spaRoot,
    SG_SECRETS_FILE: options.secretsFile ?? nginxPaths.devSecretsFile,
    SG_ACCESS_LOG_OPTIONS: options.accessLogOptions ?? LOCAL_ACCESS_LOG_OPTIONS,
    SG_WORKER_PROCESSES: given(options.workerProcesses, defaults.SG_WORKER_PROCESSES),
    SG_OIDC_ISSUER: issuer,
    SG_OIDC_CLIENT_ID: given(options.oidcClientId, defaults.SG_OIDC_CLIENT_ID),
    SG_OIDC_SCOPE: given(options.oidcScope, defaults.SG_OIDC_SCOPE),
    SG_OIDC_AUDIENCE: given(options.oidcAudience, defaults.SG_OIDC_AUDIENCE),
    SG_OIDC_AUDIENCE_PARAMETERS: given(
      options.oidcAudienceParameters,
      defaults.SG_OIDC_AUDIENCE_PARAMETERS,
    ),
    SG_CSP_CONNECT_SRC: options.cspConnectSrc ?? new URL(issuer).origin,
    SG_CSP_IMG_SRC: given(options.cspImgSrc, defaults.SG_CSP_IMG_SRC),
    SG_CLOUDFRONT_IMAGE_URL: given(options.cloudFrontImageUrl, defaults.SG_CLOUDFRONT_IMAGE_URL),
    SG_SPA_SECRET_SETS: given(options.spaSecretSets, defaults.SG_SPA_SECRET_SETS),
    SG_POLICY_FILE: given(options.policyFile, defaults.SG_POLICY_FILE),
    SG_CLOUDFRONT_COOKIES: given(options.cloudFrontCookies, defaults.SG_CLOUDFRONT_COOKIES),
    SG_SECRET_RATE: given(options.secretRate, defaults.SG_SECRET_RATE),
    SG_SECRET_BURST: given(options.secretBurst, defaults.SG_SECRET_BURST),
    SG_MEMORY_DIR: options.memoryDir ?? localMemoryDir(prefix),
    SG_SECRETS_ISSUER: options.secretsIssuer ?? issuer,
    SG_EXTERNAL_ORIGIN: options.externalOrigin ?? originOf(listen),
    SG_TRACE_CONTEXT: given(options.traceContext, defaults.SG_TRACE_CONTEXT),
    SG_TRACE_SAMPLE_PERCENT: given(options.traceSamplePercent, defaults.SG_TRACE_SAMPLE_PERCENT),
    SG_TRACE_TRUST_CLIENT_SAMPLED: given(
      options.traceTrustClientSampled,
      defaults.SG_TRACE_TRUST_CLIENT_SAMPLED,
    ),
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

/** Where docker compose mounts the verifier's policy file, in both containers. */
export const COMPOSE_POLICY_FILE = '/etc/secret-gate/verifier.json';

/**
 * The SG_ values NGINX runs with under docker compose (docker-compose.yaml): the image's defaults
 * and what compose sets differently: the verifier's service, and the verifier's policy file, whose
 * named sets NGINX serves and the SPA offers (the dev policies' step-up set, as under `npm start`).
 */
export function dockerNginxEnv(): NginxEnv {
  return {
    ...nginxDefaults(),
    SG_VERIFIER_ADDR: 'verifier:8090',
    SG_POLICY_FILE: COMPOSE_POLICY_FILE,
  };
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

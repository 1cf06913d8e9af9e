// Runtime configuration read from /config.json, which NGINX renders from its environment so one
// build runs against the dev IdP and any production IdP. Parsed once, every problem reported.

import { clockSkewSeconds } from './clock-skew.js';

/** What the app needs to sign in and reach the gate. Frozen after parsing. */
export interface AppConfig {
  /** OpenID Provider issuer identifier; discovery happens at `${issuer}/.well-known/openid-configuration`. */
  readonly issuer: URL;
  readonly clientId: string;
  /** Space-separated scopes requested at sign-in; always includes `openid`. */
  readonly scope: string;
  /** The API the access token is requested for. */
  readonly audience: string;
  /**
   * How the authorization and token requests name it: `resource` (RFC 8707), `audience` (Auth0),
   * both or neither (an IdP that takes the API from the scope or its own configuration).
   */
  readonly audienceParameters: readonly AudienceParameter[];
  /**
   * Named secret sets the app offers besides the default one, each fetched from
   * `/secret/<name>` (the verifier policy of that name, which may ask for a step-up).
   */
  readonly secretSets: readonly string[];
  /** Present only when CloudFront signed cookies are configured at the gate. */
  readonly cloudfront?: { readonly imageUrl: URL };
  /** Seconds this browser's clock is behind the gate's (negative: ahead); absent when in step. */
  readonly clockSkewSeconds?: number;
}

export const AUDIENCE_PARAMETERS = ['resource', 'audience'] as const;
export type AudienceParameter = (typeof AUDIENCE_PARAMETERS)[number];

/** A space-separated list of `resource` and `audience`; absent: `resource`, the standard. */
function parseAudienceParameters(value: unknown, problems: string[]) {
  if (value === undefined) return ['resource'] as const;
  const names = typeof value === 'string' ? value.split(/\s+/).filter(Boolean) : [undefined];
  const known = (name: unknown): name is AudienceParameter =>
    AUDIENCE_PARAMETERS.includes(name as AudienceParameter);
  if (!names.every(known)) {
    problems.push('"audienceParameters" must list "resource" and/or "audience" (space-separated)');
    return undefined;
  }
  return Object.freeze([...new Set(names)]);
}

// A set name is one path segment of /secret/<name>: nothing to escape, nothing to traverse.
const SET_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** A space-separated list of set names; absent or empty: none besides the default set. */
function parseSecretSets(value: unknown, problems: string[]): readonly string[] | undefined {
  if (value === undefined || value === '') return Object.freeze([]);
  const names = typeof value === 'string' ? value.split(/\s+/).filter(Boolean) : undefined;
  if (!names || !names.every((name) => SET_NAME.test(name))) {
    problems.push(
      '"secretSets" must be a space-separated list of set names (letters, digits, "-" and "_")',
    );
    return undefined;
  }
  return Object.freeze([...new Set(names)]);
}

/** The configuration could not be loaded or is not usable; `problems` lists every reason. */
export class ConfigError extends Error {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(`The app configuration is not usable: ${problems.join('; ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

// Plain http is accepted only where no network can intercept it (the dev IdP on loopback).
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

function isLoopback(url: URL): boolean {
  return LOOPBACK_HOSTS.has(url.hostname);
}

function parseUrl(value: unknown, field: string, base: string | undefined, problems: string[]) {
  if (typeof value !== 'string' || value.trim() === '') {
    problems.push(`"${field}" must be a non-empty string`);
    return undefined;
  }
  let url: URL;
  try {
    url = new URL(value, base);
  } catch {
    problems.push(`"${field}" is not a valid URL`);
    return undefined;
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url))) {
    problems.push(`"${field}" must use https (plain http only on loopback)`);
    return undefined;
  }
  return url;
}

function parseText(value: unknown, field: string, problems: string[]): string | undefined {
  if (typeof value !== 'string' || value.trim() === '') {
    problems.push(`"${field}" must be a non-empty string`);
    return undefined;
  }
  return value.trim();
}

/**
 * Validates the parsed JSON of /config.json. `origin` resolves a relative CloudFront image path
 * (an image served through the same NGINX). Throws ConfigError naming every bad field.
 */
export function parseConfig(json: unknown, origin: string): AppConfig {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new ConfigError(['the document must be a JSON object']);
  }
  const raw = json as Record<string, unknown>;
  const problems: string[] = [];

  const issuer = parseUrl(raw.issuer, 'issuer', undefined, problems);
  if (issuer && (issuer.search !== '' || issuer.hash !== '')) {
    problems.push('"issuer" must not have a query or fragment');
  }
  const clientId = parseText(raw.clientId, 'clientId', problems);
  const scope = parseText(raw.scope, 'scope', problems);
  if (scope !== undefined && !scope.split(/\s+/).includes('openid')) {
    problems.push('"scope" must include "openid" (the ID token names the signed-in user)');
  }
  const audience = parseText(raw.audience, 'audience', problems);
  const audienceParameters = parseAudienceParameters(raw.audienceParameters, problems);
  const secretSets = parseSecretSets(raw.secretSets, problems);

  let cloudfront: AppConfig['cloudfront'];
  if (raw.cloudfront !== undefined && raw.cloudfront !== null) {
    const cf = raw.cloudfront;
    if (typeof cf !== 'object' || Array.isArray(cf)) {
      problems.push('"cloudfront" must be an object');
    } else {
      const imageUrl = parseUrl(
        (cf as Record<string, unknown>).imageUrl,
        'cloudfront.imageUrl',
        origin,
        problems,
      );
      if (imageUrl) cloudfront = Object.freeze({ imageUrl });
    }
  }

  if (
    problems.length > 0 ||
    !issuer ||
    !clientId ||
    !scope ||
    !audience ||
    !audienceParameters ||
    !secretSets
  ) {
    throw new ConfigError(problems);
  }
  return Object.freeze({
    issuer,
    clientId,
    scope,
    audience,
    audienceParameters,
    secretSets,
    ...(cloudfront ? { cloudfront } : {}),
  });
}

/** Fetches and validates the runtime configuration; network and HTTP failures become ConfigError. */
export async function loadConfig(
  fetchFn: typeof fetch,
  origin: string,
  path = '/config.json',
): Promise<AppConfig> {
  let response: Response;
  try {
    response = await fetchFn(new URL(path, origin), {
      cache: 'no-store',
      headers: { Accept: 'application/json' },
    });
  } catch {
    throw new ConfigError([`${path} could not be reached`]);
  }
  if (!response.ok) throw new ConfigError([`${path} answered HTTP ${response.status}`]);
  let json: unknown;
  try {
    json = await response.json();
  } catch {
    throw new ConfigError([`${path} is not valid JSON`]);
  }
  const config = parseConfig(json, origin);
  const skew = clockSkewSeconds(response.headers.get('Date'), Date.now());
  return skew === 0 ? config : Object.freeze({ ...config, clockSkewSeconds: skew });
}

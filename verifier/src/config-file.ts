// The JSON file named by VERIFIER_CONFIG: several issuers and named policies. The schema is closed
// (unknown fields are problems) so a misspelt setting can never silently weaken a check.
import type { IssuerConfig, PolicyConfig } from './config-types.js';
import { parseCloudFrontConfig } from './cloudfront/gate-config.js';
import {
  parseAlgorithms,
  parseDpopMode,
  parseDuration,
  parseUrl,
  type Problems,
} from './config-values.js';

interface FileDefaults {
  readonly clientClaims: readonly string[];
  readonly fetchTimeout: number;
}

type Json = Record<string, unknown>;

const ISSUER_FIELDS: Record<IssuerConfig['type'], readonly string[]> = {
  jwt: [
    'type',
    'issuer',
    'audience',
    'jwksUri',
    'algorithms',
    'clockTolerance',
    'requireTyp',
    'clientClaims',
  ],
  introspection: [
    'type',
    'issuer',
    'endpoint',
    'clientId',
    'clientSecret',
    'audience',
    'cacheTtl',
    'timeout',
    'clientClaims',
  ],
  userinfo: ['type', 'issuer', 'endpoint', 'cacheTtl', 'timeout', 'clientClaims'],
};
const POLICY_FIELDS = ['issuers', 'scopes', 'cloudfront', 'dpop'];

/**
 * Example:
 * ```json
 * { "issuers": [{ "type": "jwt", "issuer": "https://idp", "audience": "secret-gate-api" }],
 *   "policies": { "secret": { "issuers": ["https://idp"], "scopes": ["secrets:read"] } } }
 * ```
 */
export function parseConfigFile(
  text: string,
  defaults: FileDefaults,
  problems: Problems,
): { issuers: Map<string, IssuerConfig>; policies: Map<string, PolicyConfig> } {
  const issuers = new Map<string, IssuerConfig>();
  const policies = new Map<string, PolicyConfig>();
  let root: unknown;
  try {
    root = JSON.parse(text);
  } catch (error) {
    problems.push(`VERIFIER_CONFIG: not valid JSON (${(error as Error).message})`);
    return { issuers, policies };
  }
  if (!isObject(root)) {
    problems.push('VERIFIER_CONFIG: the file must hold a JSON object');
    return { issuers, policies };
  }
  checkFields('config', root, ['issuers', 'policies'], problems);
  const issuerList = Array.isArray(root.issuers) ? root.issuers : [];
  if (issuerList.length === 0) problems.push('config.issuers: at least one issuer is required');
  issuerList.forEach((raw: unknown, index) => {
    const issuer = parseIssuer(`config.issuers[${index}]`, raw, defaults, problems);
    if (!issuer) return;
    if (issuers.has(issuer.issuer))
      problems.push(`config.issuers[${index}]: duplicate issuer "${issuer.issuer}"`);
    issuers.set(issuer.issuer, issuer);
  });

  const policyMap = isObject(root.policies) ? root.policies : {};
  if (Object.keys(policyMap).length === 0)
    problems.push('config.policies: at least one policy is required');
  for (const [name, raw] of Object.entries(policyMap)) {
    const where = `config.policies.${name}`;
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(name))
      problems.push(`${where}: policy names use A-Z a-z 0-9 _ . - only`);
    if (!isObject(raw)) {
      problems.push(`${where}: expected an object`);
      continue;
    }
    checkFields(where, raw, POLICY_FIELDS, problems);
    const allowed = stringArray(`${where}.issuers`, raw.issuers, problems);
    if (allowed.length === 0) problems.push(`${where}.issuers: at least one issuer is required`);
    for (const iss of allowed) {
      if (!issuers.has(iss)) problems.push(`${where}.issuers: "${iss}" is not a configured issuer`);
    }
    const opaque = allowed.filter((iss) => issuers.get(iss)?.type !== 'jwt' && issuers.has(iss));
    if (opaque.length > 1) {
      // An opaque token does not say who issued it, so a policy can only ask one opaque issuer.
      problems.push(`${where}.issuers: at most one introspection/userinfo issuer per policy`);
    }
    const scopes =
      raw.scopes === undefined ? [] : stringArray(`${where}.scopes`, raw.scopes, problems);
    let cloudfront: PolicyConfig['cloudfront'];
    if (raw.cloudfront !== undefined) {
      // The signer owns its settings; it validates them (key file included) and names every problem.
      const parsed = parseCloudFrontConfig(raw.cloudfront, `${where}.cloudfront`);
      problems.push(...parsed.problems);
      cloudfront = parsed.config;
    }
    const dpop =
      raw.dpop === undefined ? 'off' : parseDpopMode(`${where}.dpop`, raw.dpop, problems);
    policies.set(name, { name, issuers: allowed, scopes, cloudfront, dpop });
  }
  return { issuers, policies };
}

function parseIssuer(
  where: string,
  raw: unknown,
  defaults: FileDefaults,
  problems: Problems,
): IssuerConfig | undefined {
  if (!isObject(raw)) {
    problems.push(`${where}: expected an object`);
    return undefined;
  }
  const type = raw.type ?? 'jwt';
  if (type !== 'jwt' && type !== 'introspection' && type !== 'userinfo') {
    problems.push(`${where}.type: expected "jwt", "introspection" or "userinfo"`);
    return undefined;
  }
  checkFields(where, raw, ISSUER_FIELDS[type], problems);
  const issuer = requiredString(`${where}.issuer`, raw.issuer, problems);
  if (issuer) parseUrl(`${where}.issuer`, issuer, problems);
  const clientClaims =
    raw.clientClaims === undefined
      ? defaults.clientClaims
      : stringArray(`${where}.clientClaims`, raw.clientClaims, problems);
  const endpoint = optionalUrl(`${where}.endpoint`, raw.endpoint, problems);
  const timeout =
    raw.timeout === undefined
      ? defaults.fetchTimeout
      : seconds(`${where}.timeout`, raw.timeout, problems);
  const cacheTtl =
    raw.cacheTtl === undefined ? 60 : seconds(`${where}.cacheTtl`, raw.cacheTtl, problems);
  switch (type) {
    case 'jwt':
      return {
        type,
        issuer,
        audience: requiredString(`${where}.audience`, raw.audience, problems),
        jwksUri: optionalUrl(`${where}.jwksUri`, raw.jwksUri, problems),
        algorithms: parseAlgorithms(
          `${where}.algorithms`,
          raw.algorithms === undefined
            ? 'RS256,ES256,PS256,EdDSA'
            : stringArray(`${where}.algorithms`, raw.algorithms, problems),
          problems,
        ),
        clockTolerance:
          raw.clockTolerance === undefined
            ? 30
            : seconds(`${where}.clockTolerance`, raw.clockTolerance, problems),
        requireTyp:
          raw.requireTyp === undefined
            ? undefined
            : requiredString(`${where}.requireTyp`, raw.requireTyp, problems),
        clientClaims,
      };
    case 'introspection':
      return {
        type,
        issuer,
        endpoint,
        clientId: requiredString(`${where}.clientId`, raw.clientId, problems),
        clientSecret: requiredString(`${where}.clientSecret`, raw.clientSecret, problems),
        audience:
          raw.audience === undefined
            ? undefined
            : requiredString(`${where}.audience`, raw.audience, problems),
        cacheTtl,
        timeout,
        clientClaims,
      };
    case 'userinfo':
      return { type, issuer, endpoint, cacheTtl, timeout, clientClaims };
  }
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function checkFields(
  where: string,
  value: Json,
  known: readonly string[],
  problems: Problems,
): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key))
      problems.push(`${where}: unknown field "${key}" (known: ${known.join(', ')})`);
  }
}

function requiredString(where: string, value: unknown, problems: Problems): string {
  if (typeof value === 'string' && value.length > 0) return value;
  problems.push(`${where}: a non-empty string is required`);
  return '';
}

function optionalUrl(where: string, value: unknown, problems: Problems): string | undefined {
  if (value === undefined) return undefined;
  return parseUrl(where, requiredString(where, value, problems), problems);
}

function stringArray(where: string, value: unknown, problems: Problems): string[] {
  if (Array.isArray(value) && value.every((item) => typeof item === 'string' && item.length > 0))
    return value as string[];
  problems.push(`${where}: expected an array of non-empty strings`);
  return [];
}

function seconds(where: string, value: unknown, problems: Problems): number {
  if (typeof value === 'number' || typeof value === 'string')
    return parseDuration(where, value, problems);
  problems.push(`${where}: expected seconds or a duration string`);
  return 0;
}

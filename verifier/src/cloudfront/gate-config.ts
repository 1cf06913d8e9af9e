// The per-policy `cloudfront` block of the verifier's configuration, validated once at start.
// Every problem is reported (prefixed with where it sits in the config), so an operator fixes them
// all in one pass; the key file is read and checked here too so `--check-config` catches a wrong
// key before the first request does.

import { readFileSync } from 'node:fs';
import { checkResourcePattern } from './resource.js';
import {
  cloudFrontAlgorithms,
  isCloudFrontAlgorithm,
  readPrivateKey,
  type CloudFrontAlgorithm,
} from './signing-key.js';

export interface CloudFrontGateConfig {
  readonly keyPairId: string;
  /** Path of the PEM (or JWK JSON) private key. */
  readonly privateKeyFile: string;
  readonly algorithm: CloudFrontAlgorithm;
  /** Custom-policy resource the cookies grant, e.g. `https://cdn.example.com/private/*`. */
  readonly resource: string;
  /** Lifetime of the cookies handed out on an allowed request. */
  readonly ttlSeconds: number;
  /** `Domain` attribute for the cookies; absent: host-only cookies. */
  readonly cookieDomain?: string;
}

export interface ParsedCloudFrontConfig {
  /** Present exactly when `problems` is empty. */
  readonly config: CloudFrontGateConfig | undefined;
  readonly problems: string[];
}

const MAX_TTL_SECONDS = 7 * 24 * 3600;
const fields = new Set([
  'keyPairId',
  'privateKeyFile',
  'algorithm',
  'resource',
  'ttlSeconds',
  'cookieDomain',
]);
const keyPairIdShape = /^[A-Za-z0-9]{1,128}$/;
// A cookie Domain is a host name (optionally with the legacy leading dot): it goes into a
// Set-Cookie header, so anything beyond letters, digits, dots and hyphens is refused.
const cookieDomainShape =
  /^\.?(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/**
 * Validates `{ keyPairId, privateKeyFile, algorithm, resource, ttlSeconds, cookieDomain }`.
 * `algorithm` defaults to `RSA-SHA1`; `cookieDomain` is optional; unknown fields are problems
 * (a misspelt field would otherwise be silently ignored).
 */
export function parseCloudFrontConfig(value: unknown, where: string): ParsedCloudFrontConfig {
  const problems: string[] = [];
  const problem = (field: string, message: string) => problems.push(`${where}.${field} ${message}`);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return {
      config: undefined,
      problems: [
        `${where} must be an object with keyPairId, privateKeyFile, resource and ttlSeconds`,
      ],
    };
  }
  const input = value as Record<string, unknown>;
  for (const name of Object.keys(input))
    if (!fields.has(name)) problem(name, 'is not a known field');

  const { keyPairId, privateKeyFile, resource, ttlSeconds, cookieDomain } = input;
  const algorithm = input['algorithm'] ?? 'RSA-SHA1';

  if (typeof keyPairId !== 'string' || !keyPairIdShape.test(keyPairId))
    problem('keyPairId', 'must be the CloudFront public key ID (letters and digits)');
  if (!isCloudFrontAlgorithm(algorithm))
    problem('algorithm', `must be one of ${cloudFrontAlgorithms.join(', ')}`);
  if (typeof privateKeyFile !== 'string' || privateKeyFile === '') {
    problem('privateKeyFile', 'must be the path of the private key file');
  } else if (isCloudFrontAlgorithm(algorithm)) {
    const keyProblem = checkKeyFile(privateKeyFile, algorithm);
    if (keyProblem) problem('privateKeyFile', keyProblem);
  }
  try {
    checkResourcePattern(resource);
  } catch (error) {
    problem('resource', (error as Error).message.replace(/^"resource" /, ''));
  }
  if (
    typeof ttlSeconds !== 'number' ||
    !Number.isSafeInteger(ttlSeconds) ||
    ttlSeconds < 1 ||
    ttlSeconds > MAX_TTL_SECONDS
  ) {
    problem('ttlSeconds', `must be a whole number of seconds from 1 to ${MAX_TTL_SECONDS}`);
  }
  if (
    cookieDomain !== undefined &&
    (typeof cookieDomain !== 'string' || !cookieDomainShape.test(cookieDomain))
  ) {
    problem('cookieDomain', 'must be a host name such as cdn.example.com');
  }
  if (problems.length > 0) return { config: undefined, problems };

  const config: CloudFrontGateConfig = {
    keyPairId: keyPairId as string,
    privateKeyFile: privateKeyFile as string,
    algorithm: algorithm as CloudFrontAlgorithm,
    resource: resource as string,
    ttlSeconds: ttlSeconds as number,
    ...(cookieDomain === undefined ? {} : { cookieDomain: cookieDomain as string }),
  };
  return { config: Object.freeze(config), problems };
}

/** Reads and checks the key file; returns a problem sentence or undefined. */
function checkKeyFile(path: string, algorithm: CloudFrontAlgorithm): string | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    return `cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}): ${JSON.stringify(path)}`;
  }
  try {
    readPrivateKey(text, algorithm);
    return undefined;
  } catch (error) {
    return `${JSON.stringify(path)}: ${(error as Error).message.replace(/^"privateKey" /, '')}`;
  }
}

// The per-policy `cloudfront` section of the verifier's configuration, declared by the signer
// itself: its fields are validated with the rest of the document (every problem prefixed with
// where it sits), then the key file is read through the configuration's one reader and checked,
// so `--check-config` catches a wrong key before the first request does.

import type { KeyObject } from 'node:crypto';
import type { FileReader, PluginSection, Problems } from '../config-kinds.js';
import { domainCovers } from './cookie-scope.js';
import { checkResourcePattern } from './resource.js';
import {
  cloudFrontAlgorithms,
  isCloudFrontAlgorithm,
  readPrivateKey,
  type CloudFrontAlgorithm,
} from './signing-key.js';

/** The section as written: plain settings, no key material. */
export interface CloudFrontSettings {
  readonly keyPairId: string;
  /** Path of the PEM (or JWK JSON) private key. */
  readonly privateKeyFile: string;
  readonly algorithm: CloudFrontAlgorithm;
  /** Custom-policy resource the cookies grant, e.g. `https://cdn.example.com/private/*`. */
  readonly resource: string;
  /** Lifetime of the cookies handed out on an allowed request. */
  readonly ttlSeconds: number;
  /**
   * `Domain` attribute for the cookies; absent: host-only cookies (they then reach CloudFront
   * only when the distribution serves the gate's own host). A browser accepts a `Domain` only
   * when it covers the gate's host, and sends the cookie to CloudFront only when it covers the
   * resource's host: with the gate on `app.example.com` and assets on `cdn.example.com`, that is
   * `example.com` (never a public suffix).
   */
  readonly cookieDomain?: string;
}

/** The section once loaded: the settings and the checked private key. */
export interface CloudFrontGateConfig extends CloudFrontSettings {
  readonly privateKey: KeyObject;
}

export interface ParsedCloudFrontConfig {
  /** Present exactly when `problems` is empty. */
  readonly config: CloudFrontSettings | undefined;
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
 * CloudFront accepts SHA-256 for signed cookies and URLs (`CloudFront-Hash-Algorithm`), so the
 * gate prefers it; `RSA-SHA1` stays available for key groups that need it.
 */
const DEFAULT_ALGORITHM: CloudFrontAlgorithm = 'RSA-SHA256';

/**
 * Validates `{ keyPairId, privateKeyFile, algorithm, resource, ttlSeconds, cookieDomain }` without
 * reading anything. `algorithm` defaults to `RSA-SHA256`; `cookieDomain` is optional and must
 * cover the resource's host (else the browser would never send the cookies to CloudFront);
 * unknown fields are problems (a misspelt field would otherwise be silently ignored).
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
  const algorithm = input['algorithm'] ?? DEFAULT_ALGORITHM;

  if (typeof keyPairId !== 'string' || !keyPairIdShape.test(keyPairId))
    problem('keyPairId', 'must be the CloudFront public key ID (letters and digits)');
  if (!isCloudFrontAlgorithm(algorithm))
    problem('algorithm', `must be one of ${cloudFrontAlgorithms.join(', ')}`);
  if (typeof privateKeyFile !== 'string' || privateKeyFile === '')
    problem('privateKeyFile', 'must be the path of the private key file');
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
  } else if (cookieDomain !== undefined && typeof resource === 'string') {
    const host = /^[a-z*]+:\/\/([^/:]+)/i.exec(resource)?.[1];
    if (host !== undefined && !host.includes('*') && !domainCovers(cookieDomain, host))
      problem(
        'cookieDomain',
        `must be "${host}" or a parent domain of it, or the browser never sends the cookies to CloudFront`,
      );
  }
  if (problems.length > 0) return { config: undefined, problems };

  const config: CloudFrontSettings = {
    keyPairId: keyPairId as string,
    privateKeyFile: privateKeyFile as string,
    algorithm: algorithm as CloudFrontAlgorithm,
    resource: resource as string,
    ttlSeconds: ttlSeconds as number,
    ...(cookieDomain === undefined ? {} : { cookieDomain: cookieDomain as string }),
  };
  return { config: Object.freeze(config), problems };
}

/**
 * Reads the key file through the configuration's reader and checks it fits the algorithm; pushes
 * a problem that names the file but never quotes its contents.
 */
export function loadCloudFrontKey(
  settings: CloudFrontSettings,
  where: string,
  read: FileReader,
  problems: Problems,
): CloudFrontGateConfig | undefined {
  const { privateKeyFile: path } = settings;
  let text: string;
  try {
    text = read(path);
  } catch (error) {
    problems.push(
      `${where}.privateKeyFile cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}): ${JSON.stringify(path)}`,
    );
    return undefined;
  }
  try {
    return { ...settings, privateKey: readPrivateKey(text, settings.algorithm) };
  } catch (error) {
    problems.push(
      `${where}.privateKeyFile ${JSON.stringify(path)}: ${(error as Error).message.replace(/^"privateKey" /, '')}`,
    );
    return undefined;
  }
}

/** The section as the configuration model lists it for a policy. */
export const cloudFrontSection: PluginSection<CloudFrontSettings, CloudFrontGateConfig> = {
  kind: {
    parse(raw, where, problems) {
      const parsed = parseCloudFrontConfig(raw, where);
      problems.push(...parsed.problems);
      return parsed.config;
    },
  },
  load: loadCloudFrontKey,
  reference: [
    {
      path: 'keyPairId',
      env: undefined,
      default: undefined,
      doc: 'The CloudFront public key ID (letters and digits).',
    },
    {
      path: 'privateKeyFile',
      env: undefined,
      default: undefined,
      doc: 'Path of the PEM (or JWK JSON) private key: RSA 2048-bit, or ECDSA P-256 for `ECDSA-SHA256`.',
    },
    {
      path: 'algorithm',
      env: undefined,
      default: DEFAULT_ALGORITHM,
      doc: '`RSA-SHA256` (preferred: CloudFront accepts SHA-256 for cookies and URLs), `ECDSA-SHA256` or `RSA-SHA1`.',
    },
    {
      path: 'resource',
      env: undefined,
      default: undefined,
      doc: 'Custom-policy resource the cookies grant, e.g. `https://cdn.example.com/private/*`.',
    },
    {
      path: 'ttlSeconds',
      env: undefined,
      default: undefined,
      doc: `Longest lifetime of the cookies, 1 to ${MAX_TTL_SECONDS} seconds; never past the access token's \`exp\` (expiries are rounded down to a bucket of at most a quarter of it, up to 300 s). The cookies' \`Path\` is the resource's path up to its first wildcard.`,
    },
    {
      path: 'cookieDomain',
      env: undefined,
      default: undefined,
      doc: "`Domain` attribute of the cookies; unset: host-only cookies. Must cover the resource's host, and the browser accepts it only when it also covers the gate's host: gate on `app.example.com`, CDN on `cdn.example.com` → `example.com`.",
    },
  ],
};

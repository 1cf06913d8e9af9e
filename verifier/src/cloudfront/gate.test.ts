import { createPublicKey, verify } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createIo } from '../config/values.js';
import { cookiePath } from './cookie-scope.js';
import {
  cloudFrontHeaders,
  createCloudFrontDecorator,
  cloudFrontSettings,
  loadCloudFrontKey,
  type CloudFrontGateConfig,
  type CloudFrontSettings,
} from './index.js';

const fixtures = fileURLToPath(new URL('../../../test/fixtures/cloudfront/', import.meta.url));
const rsaFile = `${fixtures}rsa-2048.pkcs8.pem`;
const ecFile = `${fixtures}ec-p256.pkcs8.pem`;
const NOW = 1_800_000_123;

const valid = {
  keyPairId: 'K2JCJMDEHXQW5F',
  privateKeyFile: rsaFile,
  algorithm: 'RSA-SHA1',
  resource: 'https://cdn.example.com/private/*',
  ttlSeconds: 600,
  cookieDomain: 'example.com',
};

/** Validates the block as the verifier's configuration does, naming problems under `where`. */
function parseCloudFrontConfig(value: unknown, where: string) {
  const result = cloudFrontSettings.safeParse(value);
  const problems = (result.error?.issues ?? []).map(
    (issue) => `${[where, ...issue.path].join('.')}: ${issue.message}`,
  );
  return { config: result.data, problems };
}

const fail =
  (problems: string[]) =>
  (message: string, path: readonly string[] = []) =>
    problems.push(`${['cf', ...path].join('.')}: ${message}`);

function parseOk(value: unknown) {
  const { config, problems } = parseCloudFrontConfig(value, 'policies.secret.cloudfront');
  expect(problems).toEqual([]);
  if (!config) throw new Error('no config');
  return config;
}

const readKey = (path: string) => readFileSync(path, 'utf8');

/** Validates the block, then reads its key through the reader, as the verifier's config does. */
function loadOk(value: unknown): CloudFrontGateConfig {
  const problems: string[] = [];
  const config = loadCloudFrontKey(parseOk(value), createIo(readKey, {}), fail(problems));
  expect(problems).toEqual([]);
  if (!config) throw new Error('no config');
  return config;
}

function loadProblems(value: CloudFrontSettings): string[] {
  const problems: string[] = [];
  loadCloudFrontKey(value, createIo(readKey, {}), fail(problems));
  return problems;
}

/** A token that outlives every cookie in these tests. */
const FAR = NOW + 86_400;

/** The grant's cookie values and attributes, by the cookie or attribute they become. */
async function headersOf(config: CloudFrontGateConfig, now: number, tokenExp = now + 86_400) {
  const grant = await createCloudFrontDecorator(config)(now, tokenExp);
  if (grant === undefined) throw new Error('no grant');
  const fields: Record<string, string> = {
    Policy: grant.policy,
    Signature: grant.signature,
    Expires: String(grant.expires),
    'Key-Pair-Id': grant.keyPairId,
    Path: grant.path,
  };
  if (grant.sha256) fields['Hash-Algorithm'] = 'SHA256';
  if (grant.cookieDomain !== undefined) fields['Domain'] = grant.cookieDomain;
  return fields;
}

function decode(value: string): Buffer {
  return Buffer.from(value.replace(/-/g, '+').replace(/_/g, '=').replace(/~/g, '/'), 'base64');
}

describe('the cloudfront section (cloudFrontSettings)', () => {
  it('accepts a complete block', () => {
    expect(parseOk(valid)).toEqual(valid);
  });

  it('defaults algorithm to RSA-SHA256 (CloudFront accepts SHA-256) and leaves cookieDomain out when absent', () => {
    const { algorithm: _a, cookieDomain: _d, ...rest } = valid;
    const config = parseOk(rest);
    expect(config.algorithm).toBe('RSA-SHA256');
    expect('cookieDomain' in config).toBe(false);
  });

  it('reports every problem at once, each prefixed with where it sits', () => {
    const { config, problems } = parseCloudFrontConfig(
      {
        keyPairId: 'K 1',
        privateKeyFile: '/nonexistent/cf.pem',
        algorithm: 'RS256',
        resource: 'cdn.example.com/*',
        ttlSeconds: 0,
        cookieDomain: 'example.com; Secure',
        ttl: 5,
      },
      'p.cf',
    );
    expect(config).toBeUndefined();
    expect(problems).toEqual([
      'p.cf.keyPairId: must be the CloudFront public key ID (letters and digits)',
      'p.cf.algorithm: must be one of RSA-SHA1, RSA-SHA256, ECDSA-SHA256',
      'p.cf.resource: must be an absolute http:// or https:// URL',
      'p.cf.ttlSeconds: must be a whole number of seconds from 1 to 604800',
      'p.cf.cookieDomain: must be a host name such as cdn.example.com',
      expect.stringMatching(/^p\.cf: unknown field "ttl" \(known: keyPairId, /),
    ]);
  });

  it('validates without reading anything: the key file is read by the load step', () => {
    expect(
      parseCloudFrontConfig({ ...valid, privateKeyFile: '/nonexistent/cf.pem' }, 'cf'),
    ).toEqual({
      config: { ...valid, privateKeyFile: '/nonexistent/cf.pem' },
      problems: [],
    });
  });

  it('loads the key through the reader, so a missing or mismatched key is a config problem, without its contents', () => {
    expect(loadProblems({ ...parseOk(valid), privateKeyFile: '/nonexistent/cf.pem' })).toEqual([
      'cf.privateKeyFile: cannot read "/nonexistent/cf.pem" (ENOENT)',
    ]);

    expect(loadProblems({ ...parseOk(valid), algorithm: 'ECDSA-SHA256' })).toEqual([
      `cf.privateKeyFile: ${JSON.stringify(rsaFile)}: must be an ECDSA P-256 key for algorithm "ECDSA-SHA256"`,
    ]);

    const dir = mkdtempSync(join(tmpdir(), 'cf-config-'));
    writeFileSync(
      join(dir, 'garbage.pem'),
      '-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n',
    );
    const garbage = loadProblems({ ...parseOk(valid), privateKeyFile: join(dir, 'garbage.pem') });
    expect(garbage).toHaveLength(1);
    expect(garbage[0]).toMatch(/is not a readable private key/);
    expect(garbage[0]).not.toContain('c2VjcmV0');
  });

  it('refuses a cookieDomain that does not cover the resource host (the browser would never send the cookies)', () => {
    expect(
      parseCloudFrontConfig({ ...valid, cookieDomain: 'app.example.com' }, 'cf').problems,
    ).toEqual([
      'cf.cookieDomain: must be "cdn.example.com" or a parent domain of it, or the browser never sends the cookies to CloudFront',
    ]);
    expect(
      parseCloudFrontConfig({ ...valid, cookieDomain: '.example.com' }, 'cf').problems,
    ).toEqual([]);
    expect(
      parseCloudFrontConfig({ ...valid, cookieDomain: 'cdn.example.com' }, 'cf').problems,
    ).toEqual([]);
  });

  it('refuses a value that is not an object', () => {
    expect(parseCloudFrontConfig('yes', 'cf').problems).toEqual(['cf: expected an object']);
  });
});

describe('cloudFrontHeaders', () => {
  it('renders complete Set-Cookie values, one header per cookie, for NGINX to add as they are', () => {
    const attributes =
      '; Secure; HttpOnly; SameSite=Lax; Path=/private/; Domain=example.com; Expires=Tue, 01 Jan 2030 00:00:00 GMT';
    const grant = {
      kind: 'cloudfront-cookies',
      keyPairId: 'K2JCJMDEHXQW5F',
      policy: 'eyJTdGF0ZW1lbnQiOltdfQ__',
      signature: 'c2ln~bmF0-dXJl_',
      expires: 1_893_456_000,
      sha256: true,
      cookieDomain: 'example.com',
      path: '/private/',
    } as const;
    expect(cloudFrontHeaders(grant)).toEqual([
      ['X-Auth-CF-Policy', `CloudFront-Policy=eyJTdGF0ZW1lbnQiOltdfQ__${attributes}`],
      ['X-Auth-CF-Signature', `CloudFront-Signature=c2ln~bmF0-dXJl_${attributes}`],
      ['X-Auth-CF-Key-Pair-Id', `CloudFront-Key-Pair-Id=K2JCJMDEHXQW5F${attributes}`],
      ['X-Auth-CF-Hash-Algorithm', `CloudFront-Hash-Algorithm=SHA256${attributes}`],
    ]);
    const hostOnly = cloudFrontHeaders({ ...grant, sha256: false, cookieDomain: undefined });
    expect(hostOnly.map(([name]) => name)).toEqual([
      'X-Auth-CF-Policy',
      'X-Auth-CF-Signature',
      'X-Auth-CF-Key-Pair-Id',
    ]);
    expect(hostOnly[0]?.[1]).not.toContain('Domain=');
  });
});

describe('createCloudFrontDecorator', () => {
  it('answers the architecture headers, signed over the policy they carry', async () => {
    const headers = await headersOf(loadOk(valid), NOW);
    expect(Object.keys(headers).sort()).toEqual([
      'Domain',
      'Expires',
      'Key-Pair-Id',
      'Path',
      'Policy',
      'Signature',
    ]);
    expect(headers['Key-Pair-Id']).toBe('K2JCJMDEHXQW5F');
    expect(headers['Domain']).toBe('example.com');
    expect(headers['Path']).toBe('/private/');
    const policy = decode(headers['Policy'] ?? '');
    expect(JSON.parse(policy.toString())).toEqual({
      Statement: [
        {
          Resource: 'https://cdn.example.com/private/*',
          Condition: { DateLessThan: { 'AWS:EpochTime': Number(headers['Expires']) } },
        },
      ],
    });
    const publicKey = createPublicKey(readFileSync(rsaFile, 'utf8'));
    expect(verify('sha1', policy, publicKey, decode(headers['Signature'] ?? ''))).toBe(true);
  });

  it('expires at most ttlSeconds from now, rounded down to a bucket of a quarter of the TTL', async () => {
    const headers = await headersOf(loadOk(valid), NOW);
    const expires = Number(headers['Expires']);
    expect(expires).toBeLessThanOrEqual(NOW + 600);
    expect(expires).toBeGreaterThan(NOW + 600 - 150);
    expect(expires % 150).toBe(0);
  });

  it.each([
    // NOW is 1_800_000_123; buckets are 150 s (a quarter of the 600 s TTL).
    ['a token that ends before the TTL: its exp, rounded down', NOW + 400, 1_800_000_450],
    ['a token that ends inside the current bucket: its exact exp', NOW + 20, NOW + 20],
    ['a token with a fractional exp: rounded down', NOW + 20.9, NOW + 20],
  ])('never expires after the token that earned it (%s)', async (_case, tokenExp, expected) => {
    const headers = await headersOf(loadOk(valid), NOW, tokenExp);
    expect(Number(headers['Expires'])).toBe(expected);
    const policy = JSON.parse(decode(headers['Policy'] ?? '').toString()) as {
      Statement: [{ Condition: { DateLessThan: { 'AWS:EpochTime': number } } }];
    };
    expect(policy.Statement[0].Condition.DateLessThan['AWS:EpochTime']).toBe(expected);
  });

  it('hands out no cookie for a token with less than a second left', async () => {
    await expect(createCloudFrontDecorator(loadOk(valid))(NOW, NOW + 0.5)).resolves.toBeUndefined();
  });

  it.each([
    ['https://cdn.example.com/private/*', '/private/'],
    ['https://cdn.example.com/*', '/'],
    ['https://*.example.com/media/v1/img-*.png', '/media/v1/'],
    ['https://cdn.example.com/private/report.pdf', '/private/report.pdf'],
    ['https://cdn.example.com/a/b?.jpg', '/a/'],
    ['https://cdn.example.com/a;b/c/*', '/'],
  ])('derives the cookie Path from the resource %s → %s', async (resource, path) => {
    const headers = await headersOf(loadOk({ ...valid, resource, cookieDomain: undefined }), NOW);
    expect(headers['Path']).toBe(path);
  });

  it('hands every user whose token outlives the window the same cookies, and new ones in the next', async () => {
    const decorate = createCloudFrontDecorator(loadOk(valid));
    const windowStart = 1_800_000_000;
    const a = await decorate(windowStart + 1, FAR);
    const b = await decorate(windowStart + 149, FAR + 5000);
    const c = await decorate(windowStart + 151, FAR);
    expect(b).toEqual(a);
    expect(c?.signature).not.toBe(a?.signature);
  });

  it('adds X-Auth-CF-Hash-Algorithm for ECDSA and omits X-Auth-CF-Domain without cookieDomain', async () => {
    const { cookieDomain: _d, ...rest } = valid;
    const config = loadOk({ ...rest, privateKeyFile: ecFile, algorithm: 'ECDSA-SHA256' });
    const headers = await headersOf(config, NOW);
    expect(headers['Hash-Algorithm']).toBe('SHA256');
    expect('Domain' in headers).toBe(false);
  });

  it('never signs with a key that does not fit its algorithm', async () => {
    const decorate = createCloudFrontDecorator({ ...loadOk(valid), algorithm: 'ECDSA-SHA256' });
    await expect(decorate(NOW, FAR)).rejects.toThrow(TypeError);
  });
});

describe('cookiePath', () => {
  it.each([
    ['https://cdn.example.com/private/*', '/private/'],
    ['https://cdn.example.com/private/a.mp4', '/private/a.mp4'],
    ['https://cdn.example.com/a/b?c/*', '/a/'],
    ['https://cdn.example.com', '/'],
    // A character a cookie Path cannot carry cuts back to the `/` before it: never an attribute.
    ['https://cdn.example.com/ok/x;Domain=evil/*', '/ok/'],
    ['https://cdn.example.com/ok/é/*', '/ok/'],
    ['https://cdn.example.com/ a/*', '/'],
  ])('scopes the cookies of %s to %s', (resource, path) => {
    expect(cookiePath(resource)).toBe(path);
  });
});

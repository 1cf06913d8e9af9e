import { createPublicKey, verify } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createIo, Deferred } from '../config/values.js';
import { captureLogger } from '../testing/fixtures.js';
import { cloudFrontSection, type CloudFrontGateConfig } from '../config/cloudfront.js';
import { cloudFrontHeaders, cookiePath, createCloudFrontGrant } from './grant.js';

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
  const result = cloudFrontSection.safeParse(value);
  const problems = (result.error?.issues ?? []).map(
    (issue) => `${[where, ...issue.path].join('.')}: ${issue.message}`,
  );
  return { config: result.data, problems };
}

const readKey = (path: string) => readFileSync(path, 'utf8');

/** Validates the block, then reads its key through the reader, as the verifier's config does. */
function load(value: unknown) {
  const { config, problems } = parseCloudFrontConfig(value, 'cf');
  expect(problems).toEqual([]);
  if (!config) throw new Error('no config');
  const failures: string[] = [];
  const loaded = config.load(createIo(readKey, {}), (message, path = []) =>
    failures.push(`${['cf', ...path].join('.')}: ${message}`),
  );
  return { loaded, failures };
}

function loadOk(value: unknown): CloudFrontGateConfig {
  const { loaded, failures } = load(value);
  expect(failures).toEqual([]);
  if (!loaded) throw new Error('no config');
  return loaded;
}

/** A token that outlives every cookie in these tests. */
const FAR = NOW + 86_400;

/** The grant's headers at `now`, and what the plugin logged. */
async function grantAt(config: CloudFrontGateConfig, now: number, tokenExp = now + 86_400) {
  const { logger, lines } = captureLogger();
  const headers = await createCloudFrontGrant(config, logger)(now, tokenExp);
  return { headers, lines };
}

/** The grant's cookie values and attributes, by the cookie or attribute they become. */
async function headersOf(config: CloudFrontGateConfig, now: number, tokenExp?: number) {
  const { headers, lines } = await grantAt(config, now, tokenExp);
  expect(lines).toEqual([]);
  const fields: Record<string, string> = {};
  for (const [name, value] of headers) {
    const [cookie = '', ...attributes] = value.split('; ');
    const [cookieName, cookieValue = ''] = cookie.split('=');
    expect(name).toBe(cookieName?.replace('CloudFront-', 'X-Auth-CF-'));
    fields[name.replace('X-Auth-CF-', '')] = cookieValue;
    for (const attribute of attributes) {
      const [key = '', setting = ''] = attribute.split('=');
      if (key === 'Expires') fields[key] = String(Date.parse(setting) / 1000);
      if (key === 'Path' || key === 'Domain') fields[key] = setting;
    }
  }
  return fields;
}

function decode(value: string): Buffer {
  return Buffer.from(value.replace(/-/g, '+').replace(/_/g, '=').replace(/~/g, '/'), 'base64');
}

describe('the cloudfront section (cloudFrontSettings)', () => {
  it('accepts a complete block', () => {
    expect(loadOk(valid)).toEqual({ ...valid, privateKey: expect.anything() });
  });

  it('defaults algorithm to RSA-SHA256 (CloudFront accepts SHA-256) and leaves cookieDomain out when absent', () => {
    const { algorithm: _a, cookieDomain: _d, ...rest } = valid;
    const config = loadOk(rest);
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
    const { config, problems } = parseCloudFrontConfig(
      { ...valid, privateKeyFile: '/nonexistent/cf.pem' },
      'cf',
    );
    expect(problems).toEqual([]);
    expect(config).toBeInstanceOf(Deferred);
  });

  it('loads the key through the reader, so a missing or mismatched key is a config problem, without its contents', () => {
    expect(load({ ...valid, privateKeyFile: '/nonexistent/cf.pem' }).failures).toEqual([
      'cf.privateKeyFile: cannot read "/nonexistent/cf.pem" (ENOENT)',
    ]);

    expect(load({ ...valid, algorithm: 'ECDSA-SHA256' }).failures).toEqual([
      `cf.privateKeyFile: ${JSON.stringify(rsaFile)}: must be an ECDSA P-256 key for algorithm "ECDSA-SHA256"`,
    ]);

    const dir = mkdtempSync(join(tmpdir(), 'cf-config-'));
    writeFileSync(
      join(dir, 'garbage.pem'),
      '-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n',
    );
    const garbage = load({ ...valid, privateKeyFile: join(dir, 'garbage.pem') }).failures;
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
    const cookies = {
      'CloudFront-Policy': 'eyJTdGF0ZW1lbnQiOltdfQ__',
      'CloudFront-Signature': 'c2ln~bmF0-dXJl_',
      'CloudFront-Key-Pair-Id': 'K2JCJMDEHXQW5F',
    } as const;
    const signed = {
      cookies: { ...cookies, 'CloudFront-Hash-Algorithm': 'SHA256' },
      expires: 1_893_456_000,
    } as const;
    expect(cloudFrontHeaders(signed, '/private/', 'example.com')).toEqual([
      ['X-Auth-CF-Policy', `CloudFront-Policy=eyJTdGF0ZW1lbnQiOltdfQ__${attributes}`],
      ['X-Auth-CF-Signature', `CloudFront-Signature=c2ln~bmF0-dXJl_${attributes}`],
      ['X-Auth-CF-Key-Pair-Id', `CloudFront-Key-Pair-Id=K2JCJMDEHXQW5F${attributes}`],
      ['X-Auth-CF-Hash-Algorithm', `CloudFront-Hash-Algorithm=SHA256${attributes}`],
    ]);
    const hostOnly = cloudFrontHeaders({ ...signed, cookies }, '/private/', undefined);
    expect(hostOnly.map(([name]) => name)).toEqual([
      'X-Auth-CF-Policy',
      'X-Auth-CF-Signature',
      'X-Auth-CF-Key-Pair-Id',
    ]);
    expect(hostOnly[0]?.[1]).not.toContain('Domain=');
  });
});

describe('createCloudFrontGrant', () => {
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
    expect(await grantAt(loadOk(valid), NOW, NOW + 0.5)).toEqual({ headers: [], lines: [] });
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
    const grant = createCloudFrontGrant(loadOk(valid), captureLogger().logger);
    const windowStart = 1_800_000_000;
    const a = await grant(windowStart + 1, FAR);
    const b = await grant(windowStart + 149, FAR + 5000);
    const c = await grant(windowStart + 151, FAR);
    expect(b).toEqual(a);
    expect(c[1]?.[1]).not.toBe(a[1]?.[1]);
  });

  it('adds X-Auth-CF-Hash-Algorithm for ECDSA and omits X-Auth-CF-Domain without cookieDomain', async () => {
    const { cookieDomain: _d, ...rest } = valid;
    const config = loadOk({ ...rest, privateKeyFile: ecFile, algorithm: 'ECDSA-SHA256' });
    const headers = await headersOf(config, NOW);
    expect(headers['Hash-Algorithm']).toBe('SHA256');
    expect('Domain' in headers).toBe(false);
  });

  it('never signs with a key that does not fit its algorithm: the allow goes out without cookies, the failure is logged', async () => {
    const { headers, lines } = await grantAt({ ...loadOk(valid), algorithm: 'ECDSA-SHA256' }, NOW);
    expect(headers).toEqual([]);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({
      level: 50,
      msg: 'CloudFront signing failed',
    });
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

import { execFileSync } from 'node:child_process';
import { createPrivateKey, createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { getSignedCookies, getSignedUrl } from '@aws-sdk/cloudfront-signer';
import { describe, expect, it } from 'vitest';
import { toCloudFrontBase64 } from './cloudfront-base64.js';
import { cannedPolicy, customPolicy } from './policy.js';
import { createCloudFrontSigner, type CloudFrontSignerOptions } from './signer.js';

const fixtures = fileURLToPath(new URL('../../../test/fixtures/cloudfront/', import.meta.url));
const rsaPkcs8File = `${fixtures}rsa-2048.pkcs8.pem`;
const rsaPkcs8 = readFileSync(rsaPkcs8File, 'utf8');
const rsaPkcs1 = readFileSync(`${fixtures}rsa-2048.pkcs1.pem`, 'utf8');
const ecPkcs8 = readFileSync(`${fixtures}ec-p256.pkcs8.pem`, 'utf8');
const ecPublic = createPublicKey(readFileSync(`${fixtures}ec-p256.public.pem`, 'utf8'));

const keyPairId = 'K2JCJMDEHXQW5F';
const NOW = 1_800_000_000; // frozen clock for every signer below
const EXPIRES = 1_800_003_600;
const NOT_BEFORE = 1_799_999_000;
const clock = () => NOW;

function signer(options: Partial<CloudFrontSignerOptions> = {}) {
  return createCloudFrontSigner({ keyPairId, privateKey: rsaPkcs8, now: clock, ...options });
}

/** Decodes CloudFront base64 back to bytes. */
function fromCloudFrontBase64(value: string): Buffer {
  return Buffer.from(value.replace(/-/g, '+').replace(/_/g, '=').replace(/~/g, '/'), 'base64');
}

function queryValue(url: string, name: string): string {
  const match = new RegExp(`[?&]${name}=([^&]*)`).exec(url);
  if (!match?.[1]) throw new Error(`no ${name} in ${url}`);
  return match[1];
}

const sdkDate = (epochSeconds: number) => new Date(epochSeconds * 1000);

describe('signUrl agrees byte for byte with @aws-sdk/cloudfront-signer', () => {
  const table = [
    { name: 'canned policy', url: 'https://d111111abcdef8.cloudfront.net/image.jpg' },
    {
      name: 'canned policy keeping an existing query string',
      url: 'https://d111111abcdef8.cloudfront.net/image.jpg?color=red&size=medium',
    },
    {
      name: 'custom policy with a start date',
      url: 'https://d111111abcdef8.cloudfront.net/video.mp4',
      notBefore: NOT_BEFORE,
    },
    {
      name: 'custom policy with an IP range',
      url: 'https://d111111abcdef8.cloudfront.net/report.pdf?v=2',
      ipAddress: '192.0.2.0/24',
    },
    {
      name: 'custom policy with a single IP, start date and query string',
      url: 'https://d111111abcdef8.cloudfront.net/a/b.txt?x=1&y=2',
      notBefore: NOT_BEFORE,
      ipAddress: '203.0.113.7',
    },
    {
      name: 'custom policy with a wildcard resource',
      url: 'https://d111111abcdef8.cloudfront.net/private/*',
      ipAddress: '0.0.0.0/0',
    },
    {
      name: 'a path with spaces and non-ASCII characters already percent-encoded',
      url: 'https://d111111abcdef8.cloudfront.net/photos/summer%20holiday/%C3%A9t%C3%A9%20%E2%98%80.jpg',
    },
    {
      name: 'percent-encoded path with a custom policy',
      url: 'https://d111111abcdef8.cloudfront.net/%E6%97%A5%E6%9C%AC/file%20name.png?lang=ja',
      notBefore: NOT_BEFORE,
    },
  ] as const;

  for (const algorithm of ['RSA-SHA1', 'RSA-SHA256'] as const) {
    describe(algorithm, () => {
      it.each(table)('$name', async (row) => {
        const ours = await (await signer({ algorithm })).signUrl({ ...row, expires: EXPIRES });
        const sdk = getSignedUrl({
          url: row.url,
          keyPairId,
          privateKey: rsaPkcs8,
          dateLessThan: sdkDate(EXPIRES),
          ...('notBefore' in row ? { dateGreaterThan: sdkDate(row.notBefore) } : {}),
          ...('ipAddress' in row ? { ipAddress: row.ipAddress } : {}),
          algorithm: algorithm === 'RSA-SHA256' ? 'SHA256' : 'SHA1',
        });
        expect(ours.url).toBe(sdk);
        expect(ours.expires).toBe(EXPIRES);
      });
    });
  }

  it('a canned URL carries Expires, Key-Pair-Id and Signature and no Policy', async () => {
    const { url } = await (await signer()).signUrl({ url: table[1].url, expires: EXPIRES });
    expect(url).toMatch(
      /^https:\/\/d111111abcdef8\.cloudfront\.net\/image\.jpg\?color=red&size=medium&Expires=1800003600&Key-Pair-Id=K2JCJMDEHXQW5F&Signature=[A-Za-z0-9~_-]+$/,
    );
  });

  it('a SHA-256 URL ends with Hash-Algorithm=SHA256', async () => {
    const { url } = await (
      await signer({ algorithm: 'RSA-SHA256' })
    ).signUrl({
      url: table[0].url,
      expires: EXPIRES,
    });
    expect(url.endsWith('&Hash-Algorithm=SHA256')).toBe(true);
  });
});

describe('signCookies agrees with @aws-sdk/cloudfront-signer', () => {
  const resource = 'https://d111111abcdef8.cloudfront.net/private/*';

  it.each([
    ['RSA-SHA1', 'SHA1'],
    ['RSA-SHA256', 'SHA256'],
  ] as const)('%s: expiry only gives a custom wildcard policy', async (algorithm, sdkAlgorithm) => {
    const ours = await (await signer({ algorithm })).signCookies({ resource, expires: EXPIRES });
    const policy = `{"Statement":[{"Resource":"${resource}","Condition":{"DateLessThan":{"AWS:EpochTime":${EXPIRES}}}}]}`;
    const sdk = getSignedCookies({
      keyPairId,
      privateKey: rsaPkcs8,
      policy,
      algorithm: sdkAlgorithm,
    });
    expect(ours.cookies).toEqual(sdk);
    expect(fromCloudFrontBase64(ours.cookies['CloudFront-Policy']).toString()).toBe(policy);
  });

  it('start date and IP range produce the same policy and signature as the SDK', async () => {
    const ours = await (
      await signer()
    ).signCookies({
      resource,
      expires: EXPIRES,
      notBefore: NOT_BEFORE,
      ipAddress: '198.51.100.0/22',
    });
    const sdk = getSignedCookies({
      url: resource,
      keyPairId,
      privateKey: rsaPkcs8,
      dateLessThan: sdkDate(EXPIRES),
      dateGreaterThan: sdkDate(NOT_BEFORE),
      ipAddress: '198.51.100.0/22',
    });
    expect(ours.cookies).toEqual(sdk);
  });

  it('returns exactly the three cookies for SHA-1 and adds CloudFront-Hash-Algorithm for SHA-256', async () => {
    const sha1 = await (await signer()).signCookies({ resource, expires: EXPIRES });
    const sha256 = await (
      await signer({ algorithm: 'RSA-SHA256' })
    ).signCookies({
      resource,
      expires: EXPIRES,
    });
    expect(Object.keys(sha1.cookies)).toEqual([
      'CloudFront-Policy',
      'CloudFront-Signature',
      'CloudFront-Key-Pair-Id',
    ]);
    expect(sha256.cookies['CloudFront-Hash-Algorithm']).toBe('SHA256');
  });
});

describe('known answers from openssl dgst on the committed key', () => {
  function opensslSignature(digest: 'sha1' | 'sha256', policy: string): string {
    const signature = execFileSync('openssl', ['dgst', `-${digest}`, '-sign', rsaPkcs8File], {
      input: policy,
    });
    return toCloudFrontBase64(signature);
  }

  it('canned RSA-SHA1 signature equals openssl dgst -sha1 -sign of the canned policy', async () => {
    const url = 'https://d111111abcdef8.cloudfront.net/horizon.jpg?size=large';
    const signed = await (await signer()).signUrl({ url, expires: EXPIRES });
    expect(queryValue(signed.url, 'Signature')).toBe(
      opensslSignature('sha1', cannedPolicy(url, EXPIRES)),
    );
  });

  it('custom RSA-SHA256 signature equals openssl dgst -sha256 -sign of the policy it carries', async () => {
    const url = 'https://d111111abcdef8.cloudfront.net/horizon.jpg';
    const signed = await (
      await signer({ algorithm: 'RSA-SHA256' })
    ).signUrl({
      url,
      expires: EXPIRES,
      ipAddress: '10.1.2.3',
    });
    const policy = customPolicy(url, { expires: EXPIRES, sourceIp: '10.1.2.3/32' });
    expect(fromCloudFrontBase64(queryValue(signed.url, 'Policy')).toString()).toBe(policy);
    expect(queryValue(signed.url, 'Signature')).toBe(opensslSignature('sha256', policy));
  });

  it('cookie signature equals openssl over the decoded CloudFront-Policy', async () => {
    const { cookies } = await (
      await signer()
    ).signCookies({
      resource: 'https://cdn.example.com/private/*',
      expires: EXPIRES,
    });
    const policy = fromCloudFrontBase64(cookies['CloudFront-Policy']).toString();
    expect(cookies['CloudFront-Signature']).toBe(opensslSignature('sha1', policy));
  });
});

describe('key formats', () => {
  const url = 'https://d111111abcdef8.cloudfront.net/k.txt';

  it('PKCS#1 PEM, PKCS#8 PEM, JWK object and JWK text sign identically', async () => {
    const jwk = createPrivateKey(rsaPkcs8).export({ format: 'jwk' });
    const urls = await Promise.all(
      [rsaPkcs1, rsaPkcs8, jwk, JSON.stringify(jwk), Buffer.from(rsaPkcs1)].map(
        async (privateKey) => (await signer({ privateKey })).signUrl({ url, expires: EXPIRES }),
      ),
    );
    expect(new Set(urls.map((u) => u.url)).size).toBe(1);
  });

  it('ECDSA P-256 signatures are DER and verify with node:crypto against the public key', async () => {
    const ecdsa = await signer({ privateKey: ecPkcs8, algorithm: 'ECDSA-SHA256' });
    // One call alone is signed inline, the rest of a burst in the thread pool: check both.
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        ecdsa.signUrl({ url: `${url}?n=${i}`, expires: EXPIRES }),
      ),
    );
    for (const [i, { url: signed }] of results.entries()) {
      expect(signed.endsWith('&Hash-Algorithm=SHA256')).toBe(true);
      const der = fromCloudFrontBase64(queryValue(signed, 'Signature'));
      expect(der[0]).toBe(0x30);
      const policy = cannedPolicy(`${url}?n=${i}`, EXPIRES);
      expect(verify('sha256', Buffer.from(policy), ecPublic, der)).toBe(true);
      expect(verify('sha256', Buffer.from(policy + ' '), ecPublic, der)).toBe(false);
    }
  });

  it('ECDSA cookies verify too', async () => {
    const ecdsa = await signer({ privateKey: ecPkcs8, algorithm: 'ECDSA-SHA256' });
    const { cookies } = await ecdsa.signCookies({ resource: `${url}*`, expires: EXPIRES });
    const policy = fromCloudFrontBase64(cookies['CloudFront-Policy']);
    const der = fromCloudFrontBase64(cookies['CloudFront-Signature']);
    expect(verify('sha256', policy, ecPublic, der)).toBe(true);
    expect(cookies['CloudFront-Hash-Algorithm']).toBe('SHA256');
  });
});

describe('sequential and concurrent signing', () => {
  it('a Promise.all burst gives the same URLs as one-at-a-time signing', async () => {
    const seq = await signer({ cacheSize: 0 });
    const par = await signer({ cacheSize: 0 });
    const urls = Array.from({ length: 12 }, (_, i) => `https://cdn.example.com/f${i}.bin`);
    const one: string[] = [];
    for (const url of urls) one.push((await seq.signUrl({ url, expires: EXPIRES })).url);
    const burst = await Promise.all(urls.map((url) => par.signUrl({ url, expires: EXPIRES })));
    expect(burst.map((r) => r.url)).toEqual(one);
  });
});

describe('signature cache', () => {
  it('concurrent requests for one policy share a single signature', async () => {
    // ECDSA signatures are randomised: equal values can only come from one signing operation.
    const ecdsa = await signer({ privateKey: ecPkcs8, algorithm: 'ECDSA-SHA256' });
    const input = { resource: 'https://cdn.example.com/private/*', expires: EXPIRES };
    const [a, b, c] = await Promise.all([
      ecdsa.signCookies(input),
      ecdsa.signCookies(input),
      ecdsa.signCookies(input),
    ]);
    expect(b).toEqual(a);
    expect(c).toEqual(a);
  });

  it('with cacheSize 0 every request is signed afresh', async () => {
    const ecdsa = await signer({ privateKey: ecPkcs8, algorithm: 'ECDSA-SHA256', cacheSize: 0 });
    const input = { resource: 'https://cdn.example.com/private/*', expires: EXPIRES };
    const [a, b] = await Promise.all([ecdsa.signCookies(input), ecdsa.signCookies(input)]);
    expect(b.cookies['CloudFront-Signature']).not.toBe(a.cookies['CloudFront-Signature']);
  });
});

describe('expiry bucketing', () => {
  const resource = 'https://cdn.example.com/private/*';

  it('two requests in one window get identical cookies and the window end as expiry', async () => {
    const s = await signer({ bucketSeconds: 300 });
    const a = await s.signCookies({ resource, expires: 1_800_000_301 });
    const b = await s.signCookies({ resource, expires: 1_800_000_599 });
    expect(b).toEqual(a);
    expect(a.expires).toBe(1_800_000_600);
  });

  it('requests in different windows get different cookies', async () => {
    const s = await signer({ bucketSeconds: 300 });
    const a = await s.signCookies({ resource, expires: 1_800_000_599 });
    const b = await s.signCookies({ resource, expires: 1_800_000_601 });
    expect(b.expires).toBe(1_800_000_900);
    expect(b.cookies['CloudFront-Signature']).not.toBe(a.cookies['CloudFront-Signature']);
  });

  it('an expiry on a window boundary is kept as is, never moved earlier', async () => {
    const s = await signer({ bucketSeconds: 300 });
    expect((await s.signCookies({ resource, expires: 1_800_000_600 })).expires).toBe(1_800_000_600);
    const url = await s.signUrl({ url: 'https://cdn.example.com/a', expires: 1_800_000_001 });
    expect(url.expires).toBe(1_800_000_300);
    expect(url.url).toContain('Expires=1800000300&');
  });

  it('without bucketing the requested expiry is signed', async () => {
    const s = await signer();
    expect((await s.signCookies({ resource, expires: EXPIRES + 7 })).expires).toBe(EXPIRES + 7);
  });
});

describe('clear TypeErrors', () => {
  const url = 'https://cdn.example.com/a.jpg';

  it.each([
    [
      'a public key',
      { privateKey: readFileSync(`${fixtures}rsa-2048.public.pem`, 'utf8') },
      /is a public key/,
    ],
    ['garbage', { privateKey: 'not a key' }, /"privateKey" is not a readable private key/],
    [
      'a JWK without "d"',
      { privateKey: createPublicKey(rsaPkcs8).export({ format: 'jwk' }) },
      /not a readable private key/,
    ],
    ['an RSA key for ECDSA', { algorithm: 'ECDSA-SHA256' as const }, /ECDSA P-256 key/],
    ['an EC key for RSA', { privateKey: ecPkcs8 }, /RSA 2048-bit key/],
    [
      'an RSA-1024 key',
      {
        privateKey: generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({
          type: 'pkcs8',
          format: 'pem',
        }) as string,
      },
      /RSA 2048-bit key/,
    ],
    ['an unknown algorithm', { algorithm: 'HS256' as never }, /"algorithm" must be/],
    ['a key pair ID with a separator', { keyPairId: 'K1&x=1' }, /"keyPairId"/],
    ['a negative bucket', { bucketSeconds: -1 }, /"bucketSeconds"/],
  ])('the factory rejects %s', async (_name, options, message) => {
    await expect(signer(options)).rejects.toThrow(TypeError);
    await expect(signer(options)).rejects.toThrow(message);
  });

  it('key errors never echo key material', async () => {
    const secretish =
      '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n';
    const error = await signer({ privateKey: secretish }).catch((e: unknown) => e as Error);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).not.toContain('MIIE');
  });

  it.each([
    [
      'a wildcard in a canned policy',
      { url: 'https://cdn.example.com/*', expires: EXPIRES },
      /canned policy cannot hold/,
    ],
    ['an expiry in the past', { url, expires: NOW - 1 }, /"expires" is in the past/],
    ['an expiry equal to now', { url, expires: NOW }, /"expires" is in the past/],
    ['milliseconds for seconds', { url, expires: EXPIRES * 1000 }, /looks like milliseconds/],
    ['a fractional expiry', { url, expires: EXPIRES + 0.5 }, /whole epoch seconds/],
    [
      'a start after the expiry',
      { url, expires: EXPIRES, notBefore: EXPIRES },
      /"notBefore" must be earlier/,
    ],
    [
      'an octet above 255',
      { url, expires: EXPIRES, ipAddress: '10.0.0.256/8' },
      /"ipAddress" must be an IPv4/,
    ],
    ['a mask above 32', { url, expires: EXPIRES, ipAddress: '10.0.0.0/33' }, /"ipAddress"/],
    ['an empty mask', { url, expires: EXPIRES, ipAddress: '10.0.0.0/' }, /"ipAddress"/],
    ['leading zeros', { url, expires: EXPIRES, ipAddress: '010.0.0.1' }, /"ipAddress"/],
    ['IPv6', { url, expires: EXPIRES, ipAddress: '2001:db8::/32' }, /IPv6 is not matched/],
    ['a relative URL', { url: '/a.jpg', expires: EXPIRES }, /absolute http/],
    [
      'an unencoded space',
      { url: 'https://cdn.example.com/a b.jpg', expires: EXPIRES },
      /percent-encoded/,
    ],
    [
      'unencoded non-ASCII',
      { url: 'https://cdn.example.com/été.jpg', expires: EXPIRES },
      /percent-encoded/,
    ],
    [
      'a broken percent escape',
      { url: 'https://cdn.example.com/a%2.jpg', expires: EXPIRES },
      /percent-encoded/,
    ],
    ['a fragment', { url: 'https://cdn.example.com/a.jpg#top', expires: EXPIRES }, /fragment/],
    [
      'an already signed URL',
      { url: `${url}?Expires=1&Signature=x`, expires: EXPIRES },
      /already carries/,
    ],
  ])('signUrl rejects %s', async (_name, input, message) => {
    const s = await signer();
    const error = await s.signUrl(input).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toMatch(message);
  });

  it('signCookies rejects a resource that is not an absolute URL pattern', async () => {
    const s = await signer();
    await expect(
      s.signCookies({ resource: 'cdn.example.com/*', expires: EXPIRES }),
    ).rejects.toThrow(/"resource" must be an absolute/);
  });
});

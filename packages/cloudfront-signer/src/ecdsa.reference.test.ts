// ECDSA signatures checked against what CloudFront documents, with implementations that are not
// ours. The Developer Guide ("Linux commands and OpenSSL for base64 encoding and encryption")
// signs a policy with `openssl sha256 -sign private_key.pem` for an RSA 2048 or ECDSA 256 key and
// asks for `Hash-Algorithm=SHA256` (URLs) or `CloudFront-Hash-Algorithm=SHA256` (cookies) with
// SHA-256. So an ECDSA signature is OpenSSL's: SHA-256 over the policy bytes, ASN.1 DER encoded,
// then CloudFront base64. @aws-sdk/cloudfront-signer hands an EC key to node:crypto's OpenSSL
// signer the same way, so its URLs and cookies must equal ours in everything but the randomised
// signature bytes.

import { execFileSync } from 'node:child_process';
import { createPublicKey, verify } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getSignedCookies, getSignedUrl } from '@aws-sdk/cloudfront-signer';
import { describe, expect, it } from 'vitest';
import { cannedPolicy, customPolicy } from './policy.js';
import { createCloudFrontSigner } from './signer.js';

const fixtures = fileURLToPath(new URL('../../../test/fixtures/cloudfront/', import.meta.url));
const ecPrivateFile = `${fixtures}ec-p256.pkcs8.pem`;
const ecPublicFile = `${fixtures}ec-p256.public.pem`;
const ecPrivate = readFileSync(ecPrivateFile, 'utf8');
const keyPairId = 'K2JCJMDEHXQW5F';
const NOW = 1_800_000_000;
const EXPIRES = 1_800_003_600;
const url = 'https://d111111abcdef8.cloudfront.net/private/report.pdf?v=2';
const resource = 'https://d111111abcdef8.cloudfront.net/private/*';
const scratch = mkdtempSync(join(tmpdir(), 'cf-ecdsa-'));

const ecdsaSigner = () =>
  createCloudFrontSigner({
    keyPairId,
    privateKey: ecPrivate,
    algorithm: 'ECDSA-SHA256',
    now: () => NOW,
  });

function fromCloudFrontBase64(value: string): Buffer {
  return Buffer.from(value.replace(/-/g, '+').replace(/_/g, '=').replace(/~/g, '/'), 'base64');
}

function queryValue(signedUrl: string, name: string): string {
  const match = new RegExp(`[?&]${name}=([^&]*)`).exec(signedUrl);
  if (!match?.[1]) throw new Error(`no ${name} in ${signedUrl}`);
  return match[1];
}

/** `openssl dgst -<digest> -verify`, as the guide's command is checked: true on "Verified OK". */
function opensslVerifies(digest: 'sha1' | 'sha256', policy: string | Buffer, signature: Buffer) {
  const file = join(scratch, 'signature.der');
  writeFileSync(file, signature);
  try {
    execFileSync('openssl', ['dgst', `-${digest}`, '-verify', ecPublicFile, '-signature', file], {
      input: policy,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    return true;
  } catch {
    return false;
  }
}

/** The guide's own signing command: `openssl sha256 -sign private_key.pem`. */
function opensslSignature(policy: string): Buffer {
  return execFileSync('openssl', ['dgst', '-sha256', '-sign', ecPrivateFile], { input: policy });
}

describe('ECDSA-SHA256 as the CloudFront Developer Guide documents it', () => {
  it('a URL says Hash-Algorithm=SHA256 and carries a DER signature OpenSSL verifies with SHA-256', async () => {
    const signed = await (await ecdsaSigner()).signUrl({ url, expires: EXPIRES });
    expect(signed.url.endsWith('&Hash-Algorithm=SHA256')).toBe(true);
    const signature = fromCloudFrontBase64(queryValue(signed.url, 'Signature'));
    const policy = cannedPolicy(url, EXPIRES);
    expect(opensslVerifies('sha256', policy, signature)).toBe(true);
    // Not SHA-1 (CloudFront's default when no hash is named), and bound to the policy bytes.
    expect(opensslVerifies('sha1', policy, signature)).toBe(false);
    expect(opensslVerifies('sha256', cannedPolicy(url, EXPIRES + 1), signature)).toBe(false);
  });

  it('cookies say CloudFront-Hash-Algorithm=SHA256 and OpenSSL verifies them over the policy', async () => {
    const { cookies } = await (await ecdsaSigner()).signCookies({ resource, expires: EXPIRES });
    expect(cookies['CloudFront-Hash-Algorithm']).toBe('SHA256');
    const policy = fromCloudFrontBase64(cookies['CloudFront-Policy']);
    expect(policy.toString()).toBe(customPolicy(resource, { expires: EXPIRES }));
    expect(
      opensslVerifies('sha256', policy, fromCloudFrontBase64(cookies['CloudFront-Signature'])),
    ).toBe(true);
  });

  it('the signature has the encoding of the guide command: a DER SEQUENCE, not raw r‖s', async () => {
    const signed = await (await ecdsaSigner()).signUrl({ url, expires: EXPIRES });
    const ours = fromCloudFrontBase64(queryValue(signed.url, 'Signature'));
    const guide = opensslSignature(cannedPolicy(url, EXPIRES));
    const publicKey = createPublicKey(readFileSync(ecPublicFile, 'utf8'));
    for (const signature of [ours, guide]) {
      // SEQUENCE of the whole rest, starting with INTEGER r; at most 72 bytes for P-256.
      expect([signature[0], signature[1], signature[2]]).toEqual([
        0x30,
        signature.length - 2,
        0x02,
      ]);
      expect(signature.length).toBeLessThanOrEqual(72);
      expect(verify('sha256', Buffer.from(cannedPolicy(url, EXPIRES)), publicKey, signature)).toBe(
        true,
      );
    }
  });
});

describe('ECDSA-SHA256 agrees with @aws-sdk/cloudfront-signer given the same EC key', () => {
  /** The URL with its signature value taken out, and that signature. */
  function split(signedUrl: string) {
    const signature = queryValue(signedUrl, 'Signature');
    return { rest: signedUrl.replace(`Signature=${signature}`, 'Signature='), signature };
  }

  it.each([
    { name: 'canned policy', input: {} },
    { name: 'custom policy with an IP range', input: { ipAddress: '192.0.2.0/24' } },
  ])('$name: the same URL but for the signature, and both signatures verify', async (row) => {
    const ours = split(
      (await (await ecdsaSigner()).signUrl({ url, expires: EXPIRES, ...row.input })).url,
    );
    const sdk = split(
      getSignedUrl({
        url,
        keyPairId,
        privateKey: ecPrivate,
        dateLessThan: new Date(EXPIRES * 1000),
        algorithm: 'SHA256',
        ...row.input,
      }),
    );
    expect(ours.rest).toBe(sdk.rest);
    const policy =
      'ipAddress' in row.input
        ? customPolicy(url, { expires: EXPIRES, sourceIp: row.input.ipAddress })
        : cannedPolicy(url, EXPIRES);
    for (const { signature } of [ours, sdk])
      expect(opensslVerifies('sha256', policy, fromCloudFrontBase64(signature))).toBe(true);
  });

  it('the same cookies but for the signature', async () => {
    const ours = (await (await ecdsaSigner()).signCookies({ resource, expires: EXPIRES })).cookies;
    const policy = customPolicy(resource, { expires: EXPIRES });
    const sdk = getSignedCookies({ keyPairId, privateKey: ecPrivate, policy, algorithm: 'SHA256' });
    const { 'CloudFront-Signature': ourSignature, ...ourRest } = ours;
    const { 'CloudFront-Signature': sdkSignature, ...sdkRest } = sdk;
    expect(ourRest).toEqual(sdkRest);
    for (const signature of [ourSignature, sdkSignature])
      expect(opensslVerifies('sha256', policy, fromCloudFrontBase64(signature))).toBe(true);
  });
});

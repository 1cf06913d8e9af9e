import { execFile } from 'node:child_process';
import { createPublicKey, verify } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { getSignedCookies, getSignedUrl } from '@aws-sdk/cloudfront-signer';
import { describe, expect, it } from 'vitest';
import { cfSignMain } from './cf-sign.js';
import { parseCliArgs } from './cli-args.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const fixtures = `${root}test/fixtures/cloudfront/`;
const rsaFile = `${fixtures}rsa-2048.pkcs8.pem`;
const rsaPkcs1File = `${fixtures}rsa-2048.pkcs1.pem`;
const ecFile = `${fixtures}ec-p256.pkcs8.pem`;
const EXPIRES = 4_000_000_000; // far enough ahead for the real clock the CLI uses

/** Runs the command in-process, as the process entry (main.ts) does, and collects what it prints. */
async function cfSign(...args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await cfSignMain(args, {
    out: (text) => (stdout += text),
    err: (text) => (stderr += text),
  });
  return { code, stdout, stderr };
}

/** Runs the CLI as an operator would (`npm run --silent cf-sign -- ...` runs this same command). */
async function cfSignProcess(...args: string[]) {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'packages/cloudfront-signer/src/cli/main.ts', ...args],
      { cwd: root },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const common = ['--key-pair-id', 'K2JCJMDEHXQW5F', '--expires', String(EXPIRES)];
/** The options every command needs, with the RSA key. */
const withRsa = [...common, '--private-key', rsaFile];
/** A key pair and key, for the specifications of `--expires` itself. */
const keyWithoutExpiry = ['--key-pair-id', 'K1', '--private-key', rsaFile];
/** The reference: the AWS SDK signing with the key pair of `common` and the RSA key. */
const SDK_SIGNER = { keyPairId: 'K2JCJMDEHXQW5F', privateKey: readFileSync(rsaFile) };
/** The URL the AWS SDK signs, expiring when `common` says. */
const sdkSignedUrl = (
  url: string,
  extra: { dateGreaterThan?: Date; ipAddress?: string; algorithm?: 'SHA256' } = {},
) => getSignedUrl({ url, ...SDK_SIGNER, dateLessThan: new Date(EXPIRES * 1000), ...extra });

describe('cf-sign', () => {
  it('url prints the same signed URL as the AWS SDK (PKCS#1 key, existing query string)', async () => {
    const url = 'https://d111111abcdef8.cloudfront.net/a%20b.jpg?size=large';
    const run = await cfSign('url', ...common, '--private-key', rsaPkcs1File, '--url', url);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const sdk = sdkSignedUrl(url);
    expect(run.stdout).toBe(`${sdk}\n`);
  });

  it('url with --not-before, --ip and --hash SHA256 signs a custom SHA-256 policy', async () => {
    const url = 'https://d111111abcdef8.cloudfront.net/v.mp4';
    const run = await cfSign(
      'url',
      ...withRsa,
      '--url',
      url,
      '--not-before',
      '3900000000',
      '--ip',
      '192.0.2.1',
      '--hash',
      'SHA256',
    );
    const sdk = sdkSignedUrl(url, {
      dateGreaterThan: new Date(3_900_000_000_000),
      ipAddress: '192.0.2.1',
      algorithm: 'SHA256',
    });
    expect(run.stdout).toBe(`${sdk}\n`);
  });

  it('cookies prints the cookie values as JSON', async () => {
    const resource = 'https://d111111abcdef8.cloudfront.net/private/*';
    const run = await cfSign('cookies', ...withRsa, '--resource', resource);
    expect(run.code).toBe(0);
    const policy = `{"Statement":[{"Resource":"${resource}","Condition":{"DateLessThan":{"AWS:EpochTime":${EXPIRES}}}}]}`;
    expect(JSON.parse(run.stdout)).toEqual(getSignedCookies({ ...SDK_SIGNER, policy }));
  });

  it('an ECDSA key signs with SHA-256 and a DER signature', async () => {
    const resource = 'https://cdn.example.com/p/*';
    const run = await cfSign('cookies', ...common, '--private-key', ecFile, '--resource', resource);
    const cookies = JSON.parse(run.stdout) as Record<string, string>;
    const decode = (v = '') =>
      Buffer.from(v.replace(/-/g, '+').replace(/_/g, '=').replace(/~/g, '/'), 'base64');
    expect(cookies['CloudFront-Hash-Algorithm']).toBe('SHA256');
    const publicKey = createPublicKey(readFileSync(ecFile, 'utf8'));
    expect(
      verify(
        'sha256',
        decode(cookies['CloudFront-Policy']),
        publicKey,
        decode(cookies['CloudFront-Signature']),
      ),
    ).toBe(true);
  });

  it('runs through the package script as documented', async () => {
    const { stdout } = await promisify(execFile)(
      'npm',
      ['run', '--silent', 'cf-sign', '--', 'url', ...withRsa, '--url', 'https://x.example/y'],
      { cwd: root },
    );
    expect(stdout).toMatch(
      /^https:\/\/x\.example\/y\?Expires=4000000000&Key-Pair-Id=K2JCJMDEHXQW5F&Signature=[A-Za-z0-9~_-]+\n$/,
    );
  });

  it('--help prints the usage and exits 0, as a process', async () => {
    const run = await cfSignProcess('--help');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^usage:\n {2}cf-sign url/);
  });

  it('the package bin runs the built command, or names the build step while there is none', async () => {
    const manifest = JSON.parse(
      readFileSync(`${root}packages/cloudfront-signer/package.json`, 'utf8'),
    ) as { bin: Record<string, string> };
    const bin = `${root}packages/cloudfront-signer/${manifest.bin['cf-sign']}`;
    const built = existsSync(`${root}packages/cloudfront-signer/dist/cli/main.js`);
    const run = await promisify(execFile)(process.execPath, [bin, '--help']).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    if (built) expect(run).toMatchObject({ code: 0, stdout: expect.stringMatching(/^usage:/) });
    else
      expect(run).toMatchObject({
        code: 2,
        stderr: expect.stringContaining('npm run build:cloudfront-signer'),
      });
  });

  it.each([
    ['no command', [], /missing command/],
    ['an unknown flag', ['url', '--colour', 'red'], /Unknown option '--colour'/],
    ['a missing --url', ['url', ...withRsa], /missing --url/],
    ['--url on cookies', ['cookies', ...withRsa, '--url', 'https://x/y'], /--url does not apply/],
    [
      'milliseconds as --expires',
      ['url', ...keyWithoutExpiry, '--url', 'https://x/y', '--expires', '4000000000000'],
      /--expires must be epoch seconds/,
    ],
    [
      'an unknown --hash',
      ['url', ...withRsa, '--url', 'https://x/y', '--hash', 'MD5'],
      /--hash must be SHA1 or SHA256/,
    ],
  ])('exits 2 with the usage for %s', async (_name, args, message) => {
    const run = await cfSign(...args);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(message);
    expect(run.stderr).toContain('usage:');
  });

  it.each([
    [
      'an unreadable key file',
      ['--private-key', '/nonexistent.pem', '--url', 'https://x.example/y'],
      /cannot read --private-key "\/nonexistent.pem" \(ENOENT\)/,
    ],
    [
      'a public key',
      ['--private-key', `${fixtures}rsa-2048.public.pem`, '--url', 'https://x.example/y'],
      /is a public key/,
    ],
    [
      'a wildcard in a canned URL',
      ['--private-key', rsaFile, '--url', 'https://x.example/*'],
      /canned policy/,
    ],
    [
      'a malformed CIDR',
      ['--private-key', rsaFile, '--url', 'https://x.example/y', '--ip', '10.0.0.0/40'],
      /"ipAddress"/,
    ],
    [
      'SHA1 with an ECDSA key',
      ['--private-key', ecFile, '--url', 'https://x.example/y', '--hash', 'SHA1'],
      /not available for ECDSA/,
    ],
  ])('exits 2 with one clear line for %s', async (_name, args, message) => {
    const run = await cfSign('url', ...common, ...args);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(run.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    expect(run.stderr).not.toContain('BEGIN');
  });

  it('refuses an expiry in the past', async () => {
    const run = await cfSign(
      'url',
      ...keyWithoutExpiry,
      '--url',
      'https://x.example/y',
      '--expires',
      '1000000000',
    );
    expect(run).toMatchObject({ code: 2, stdout: '' });
    expect(run.stderr).toBe('cf-sign: "expires" is in the past\n');
  });
});

describe('parseCliArgs', () => {
  it('reads every option of the url command', () => {
    expect(
      parseCliArgs([
        'url',
        '--key-pair-id',
        'K1',
        '--private-key',
        'k.pem',
        '--url',
        'https://x/y',
        '--expires',
        '2000000000',
        '--not-before',
        '1900000000',
        '--ip',
        '10.0.0.0/8',
        '--hash',
        'SHA256',
      ]),
    ).toEqual({
      kind: 'run',
      command: {
        command: 'url',
        keyPairId: 'K1',
        privateKeyFile: 'k.pem',
        target: 'https://x/y',
        expires: 2_000_000_000,
        notBefore: 1_900_000_000,
        ip: '10.0.0.0/8',
        hash: 'SHA256',
      },
    });
  });

  it('rejects a stray positional argument', () => {
    expect(parseCliArgs(['cookies', 'extra'])).toEqual({
      kind: 'error',
      message: 'unexpected argument "extra"',
    });
  });
});

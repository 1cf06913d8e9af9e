// Bad entries and key files stop the start with a TypeError naming the field (never a key's
// content); a key file rewritten while running rotates the key; a file that turns unusable
// fails the mint with `key_unavailable` instead of minting with a stale or empty key.

import { chmodSync, rmSync, utimesSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import {
  MintError,
  createMinter,
  mintEntrySchema,
  type MintEntry,
  type MintEntryInput,
} from './index.js';
import { NOW, caller, createKeyDir } from './test-fixtures.js';

const keys = createKeyDir();
afterAll(() => keys.remove());
const SECRET = 'parent-key-0123456789abcdef0123456789';
const algolia = (parentKeyFile: string): MintEntryInput => ({
  kind: 'algolia-secured-key',
  parentKeyFile,
});

describe('mint entries', () => {
  it.each([
    [{ kind: 'pgp-key', keyFile: '/k' }, '"kind"'],
    [{ kind: 'jwt', alg: 'none', keyFile: '/k' }, '"alg"'],
    [{ kind: 'jwt', alg: 'HS256' }, '"keyFile"'],
    [{ kind: 'algolia-secured-key', parentKeyFile: '/k', ttlSeconds: -5 }, '"ttlSeconds"'],
    [{ kind: 'algolia-secured-key', parentKeyFile: '/k', parentKey: 'inline' }, 'parentKey'],
    [{ kind: 's3-presigned-url', key: 'a', credentialsFile: '/k' }, '"bucket"'],
    [{ kind: 'meilisearch-tenant-token', apiKeyFile: '/k', apiKeyUid: 'not-a-uid' }, '"apiKeyUid"'],
    [
      { kind: 'token-exchange', clientId: 'gate', clientAuth: { method: 'none' } },
      '"clientAuth.method"',
    ],
  ])('refuses %j, naming %s', (entry, field) => {
    const attempt = () => createMinter(entry as unknown as MintEntry);
    expect(attempt).toThrow(TypeError);
    expect(attempt).toThrow(field);
  });

  it('refuses a template naming an unknown placeholder, at start', () => {
    const parentKeyFile = keys.write('a.key', SECRET);
    expect(() =>
      createMinter(mintEntrySchema.parse({ ...algolia(parentKeyFile), filters: 'org:{org}' })),
    ).toThrow(/"filters" names an unknown placeholder "\{org\}"/);
  });

  it('refuses a missing key file, naming the field and the path', () => {
    expect(() => createMinter(mintEntrySchema.parse(algolia('/nonexistent/algolia.key')))).toThrow(
      '"parentKeyFile" (/nonexistent/algolia.key) does not exist',
    );
  });

  it.each([0o644, 0o640, 0o604, 0o660])(
    'refuses a key file of mode %s without quoting it',
    (mode) => {
      const path = keys.write(`open-${mode}.key`, SECRET, mode);
      const attempt = () => createMinter(mintEntrySchema.parse(algolia(path)));
      expect(attempt).toThrow(/"parentKeyFile" .* is open to group or others/);
      try {
        attempt();
      } catch (error) {
        expect((error as Error).message).not.toContain(SECRET);
      }
    },
  );

  it('refuses a public key where a private key is needed, and a too short HMAC key', () => {
    const publicPem = '-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n';
    const pub = keys.write('public.pem', publicPem);
    expect(() =>
      createMinter(mintEntrySchema.parse({ kind: 'jwt', alg: 'ES256', keyFile: pub })),
    ).toThrow('"keyFile" holds a public key');
    const short = keys.write('short.key', 'tooshort');
    expect(() =>
      createMinter(mintEntrySchema.parse({ kind: 'jwt', alg: 'HS256', keyFile: short })),
    ).toThrow('"keyFile" must hold at least 32 bytes');
  });

  it('token-exchange without a token endpoint in the context is refused at start', () => {
    const secretFile = keys.write('client.secret', SECRET);
    const entry = mintEntrySchema.parse({
      kind: 'token-exchange',
      clientId: 'gate',
      clientAuth: { method: 'client_secret_basic', secretFile },
    });
    expect(() => createMinter(entry)).toThrow('context.tokenEndpoint');
  });

  it('a token whose exp has passed mints nothing', async () => {
    const minter = createMinter(mintEntrySchema.parse(algolia(keys.write('b.key', SECRET))));
    await expect(minter.mint(caller({ exp: NOW - 1 }), NOW)).rejects.toBeInstanceOf(MintError);
  });
});

describe('key rotation', () => {
  const touch = (path: string, seconds: number) => utimesSync(path, seconds, seconds);
  const settle = () => new Promise((resolve) => setTimeout(resolve, 1050));

  it('a rewritten key file is used from the next check on, without a restart', async () => {
    const path = keys.write('rotate.key', SECRET);
    const minter = createMinter(mintEntrySchema.parse(algolia(path)));
    const before = (await minter.mint(caller(), NOW)).value;
    keys.write('rotate.key', `${SECRET}-next`);
    touch(path, NOW + 10);
    await settle();
    const after = (await minter.mint(caller(), NOW)).value;
    expect(after).not.toBe(before);
    const again = createMinter(mintEntrySchema.parse(algolia(path)));
    expect((await again.mint(caller(), NOW)).value).toBe(after);
  });

  it('a key file that becomes world-readable or disappears fails the mint, then recovers', async () => {
    const path = keys.write('fragile.key', SECRET);
    const minter = createMinter(mintEntrySchema.parse(algolia(path)));
    const good = (await minter.mint(caller(), NOW)).value;
    chmodSync(path, 0o644);
    await settle();
    await expect(minter.mint(caller(), NOW)).rejects.toMatchObject({
      code: 'key_unavailable',
      message: expect.stringContaining('open to group or others') as unknown,
    });
    rmSync(path);
    await expect(minter.mint(caller(), NOW)).rejects.toMatchObject({ code: 'key_unavailable' });
    keys.write('fragile.key', SECRET);
    await expect(minter.mint(caller(), NOW)).resolves.toEqual({
      value: good,
      expiresAt: NOW + 300,
    });
  });
});

// Known answers: each vendor's own SDK (npm) makes or checks the same value from the same inputs.
// A value the vendor would not produce or accept fails here.

import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { algoliasearch } from 'algoliasearch';
import { TokenVerifier } from 'livekit-server-sdk';
import { generateTenantToken } from 'meilisearch/token';
import { StreamChat } from 'stream-chat';
import Typesense from 'typesense';
import { afterAll, describe, expect, it } from 'vitest';
import { createMinter, mintEntrySchema, type MintEntryInput } from './index.js';
import { NOW, caller, createKeyDir } from './test-fixtures.js';

const keys = createKeyDir();
afterAll(() => keys.remove());

const minter = (entry: MintEntryInput) => createMinter(mintEntrySchema.parse(entry));

describe('algolia-secured-key', () => {
  const parentApiKey = 'b6c1f3e0a9d24c5e8f7a6b5c4d3e2f10';
  const parentKeyFile = keys.write('algolia.key', `${parentApiKey}\n`);
  const client = algoliasearch('APPID00000', parentApiKey);

  it("is the key algoliasearch's generateSecuredApiKey makes for the same restrictions", async () => {
    const entry = minter({
      kind: 'algolia-secured-key',
      parentKeyFile,
      filters: 'tenant:{claims.tenant} AND visible_by:{sub}',
      restrictIndices: ['products', 'orders'],
      restrictSources: '192.168.1.0/24',
      ttlSeconds: 600,
    });
    const minted = await entry.mint(caller(), NOW);
    expect(minted.expiresAt).toBe(NOW + 600);
    const reference = client.generateSecuredApiKey({
      parentApiKey,
      restrictions: {
        filters: 'tenant:acme AND visible_by:user-42',
        restrictIndices: ['products', 'orders'],
        restrictSources: '192.168.1.0/24',
        userToken: 'user-42',
        validUntil: NOW + 600,
      },
    });
    expect(minted.value).toBe(reference);
  });

  it('carries its validUntil, which the SDK reads back as the remaining validity', async () => {
    const now = Math.floor(Date.now() / 1000);
    const minted = await minter({
      kind: 'algolia-secured-key',
      parentKeyFile,
      ttlSeconds: 120,
    }).mint(caller({ exp: now + 3600 }), now);
    const remaining = client.getSecuredApiKeyRemainingValidity({ securedApiKey: minted.value });
    expect(remaining).toBeGreaterThan(115);
    expect(remaining).toBeLessThanOrEqual(120);
  });

  it("never outlives the caller's token", async () => {
    const minted = await minter({ kind: 'algolia-secured-key', parentKeyFile }).mint(
      caller({ exp: NOW + 60 }),
      NOW,
    );
    expect(minted.expiresAt).toBe(NOW + 60);
    expect(Buffer.from(minted.value, 'base64').toString()).toContain(`validUntil=${NOW + 60}`);
  });
});

describe('typesense-scoped-key', () => {
  const searchKey = 'RN23GFr1s6jQ9kgSNg2O7fYcAUXU7127';
  const parentKeyFile = keys.write('typesense.key', searchKey);

  it("is the key typesense's generateScopedSearchKey makes for the same parameters", async () => {
    const minted = await minter({
      kind: 'typesense-scoped-key',
      parentKeyFile,
      filterBy: 'company_id:={claims.tenant}',
      params: { limit_hits: 20, exclude_fields: 'internal_notes' },
    }).mint(caller(), NOW);
    const client = new Typesense.Client({
      nodes: [{ host: '127.0.0.1', port: 8108, protocol: 'http' }],
      apiKey: searchKey,
    });
    const reference = client.keys().generateScopedSearchKey(searchKey, {
      filter_by: 'company_id:=acme',
      limit_hits: 20,
      exclude_fields: 'internal_notes',
      expires_at: NOW + 300,
    });
    expect(minted).toEqual({ value: reference, expiresAt: NOW + 300 });
  });
});

describe('meilisearch-tenant-token', () => {
  const apiKey = 'a3f2c1d9e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1';
  const apiKeyUid = '85c3c2f9-bdd6-41f1-abd8-11fcf80e0f76';
  const apiKeyFile = keys.write('meili.key', apiKey);

  it("is the token meilisearch's generateTenantToken makes for the same rules", async () => {
    const minted = await minter({
      kind: 'meilisearch-tenant-token',
      apiKeyFile,
      apiKeyUid,
      searchRules: { products: { filter: 'tenant = {claims.tenant}' } },
    }).mint(caller(), NOW);
    const reference = await generateTenantToken({
      apiKey,
      apiKeyUid,
      searchRules: { products: { filter: 'tenant = acme' } },
      expiresAt: NOW + 300,
    });
    expect(minted).toEqual({ value: reference, expiresAt: NOW + 300 });
  });

  it('defaults to every index, as the SDK does', async () => {
    const minted = await minter({ kind: 'meilisearch-tenant-token', apiKeyFile, apiKeyUid }).mint(
      caller(),
      NOW,
    );
    expect(minted.value).toBe(
      await generateTenantToken({ apiKey, apiKeyUid, expiresAt: NOW + 300 }),
    );
  });
});

describe('stream-chat-token', () => {
  const apiSecret = 'k9pz8w7xq6v5t4s3r2p1n0m9l8k7j6h5g4f3d2s1a0zq';
  const secretFile = keys.write('stream.secret', apiSecret);

  it("is the token stream-chat's server createToken makes for the user", async () => {
    const minted = await minter({ kind: 'stream-chat-token', secretFile }).mint(caller(), NOW);
    const server = new StreamChat('stream-api-key', apiSecret);
    expect(minted).toEqual({
      value: server.createToken('user-42', NOW + 300, NOW),
      expiresAt: NOW + 300,
    });
  });
});

describe('livekit-token', () => {
  const apiSecret = 'lk-secret-0123456789abcdefghijklmnopqrstuv';
  const secretFile = keys.write('livekit.secret', apiSecret);

  it("is accepted by livekit-server-sdk's TokenVerifier with the room grant", async () => {
    const now = Math.floor(Date.now() / 1000);
    const minted = await minter({
      kind: 'livekit-token',
      apiKey: 'APIxK3yd3m0',
      secretFile,
      room: 'tenant-{claims.tenant}',
      name: '{claims.email}',
      canPublishData: false,
    }).mint(caller({ exp: now + 3600 }), now);
    const claims = await new TokenVerifier('APIxK3yd3m0', apiSecret).verify(minted.value);
    expect(claims).toMatchObject({
      iss: 'APIxK3yd3m0',
      sub: 'user-42',
      name: 'ada@example.com',
      exp: now + 300,
      video: {
        room: 'tenant-acme',
        roomJoin: true,
        canPublish: true,
        canSubscribe: true,
        canPublishData: false,
      },
    });
    await expect(
      new TokenVerifier('APIxK3yd3m0', 'another-secret').verify(minted.value),
    ).rejects.toThrow();
    await expect(new TokenVerifier('APIother', apiSecret).verify(minted.value)).rejects.toThrow();
  });
});

describe('s3-presigned-url', () => {
  const credentials = {
    accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
    secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  };
  const credentialsFile = keys.write('s3.json', JSON.stringify(credentials));

  const reference = (
    method: 'GET' | 'PUT',
    key: string,
    client: ConstructorParameters<typeof S3Client>[0],
    signingDate = new Date(NOW * 1000),
  ): Promise<string> => {
    const s3 = new S3Client({
      credentials, // Checksums off, as for any presigned URL a browser uses (the SDK would add its own).
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      ...client,
    });
    const command =
      method === 'GET'
        ? new GetObjectCommand({ Bucket: 'user-files', Key: key })
        : new PutObjectCommand({ Bucket: 'user-files', Key: key });
    return getSignedUrl(s3, command, { expiresIn: 300, signingDate });
  };

  it.each([
    ['GET', 'eu-west-1', undefined, false],
    ['PUT', 'eu-west-1', undefined, false],
    ['PUT', 'us-east-1', undefined, true],
    ['GET', 'auto', 'https://minio.example.com:9000', true],
    ['PUT', 'eu-central-1', 'https://s3.storage.example.net', false],
  ] as const)(
    'a %s URL in %s (endpoint %s, path style %s) is the one @aws-sdk/s3-request-presigner signs',
    async (method, region, endpoint, forcePathStyle) => {
      const minted = await minter({
        kind: 's3-presigned-url',
        method,
        bucket: 'user-files',
        key: 'uploads/{sub}/avatar (1).png',
        region,
        endpoint,
        forcePathStyle,
        credentialsFile,
      }).mint(caller({ sub: 'auth0|42+ada' }), NOW);
      const url = await reference(method, 'uploads/auth0|42+ada/avatar (1).png', {
        region,
        endpoint,
        forcePathStyle,
      });
      expect(minted).toEqual({ value: url, expiresAt: NOW + 300 });
    },
  );

  it('one minter signs with each UTC day’s own key, as the SDK does on either side of midnight', async () => {
    const entry = minter({
      kind: 's3-presigned-url',
      method: 'PUT',
      bucket: 'user-files',
      key: 'uploads/{sub}/avatar.png',
      region: 'eu-west-1',
      credentialsFile,
    });
    const user = caller({ exp: NOW + 2 * 86_400 });
    const beforeMidnight = NOW + 12 * 3600 - 1;
    for (const at of [NOW, beforeMidnight, beforeMidnight + 1, NOW]) {
      const url = await reference(
        'PUT',
        'uploads/user-42/avatar.png',
        { region: 'eu-west-1' },
        new Date(at * 1000),
      );
      expect((await entry.mint(user, at)).value).toBe(url);
    }
  });

  it('refuses a caller whose claim would leave the templated folder', async () => {
    const entry = minter({
      kind: 's3-presigned-url',
      bucket: 'user-files',
      key: 'uploads/{claims.tenant}/avatar.png',
      credentialsFile,
    });
    for (const tenant of ['../admin', 'a/b', '..', '']) {
      await expect(entry.mint(caller({ claims: { tenant } }), NOW)).rejects.toMatchObject({
        name: 'MintError',
        code: 'claim_missing',
      });
    }
  });
});

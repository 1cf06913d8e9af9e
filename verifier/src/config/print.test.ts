import { describe, expect, it } from 'vitest';
import { loadConfig } from './load.js';
import { printableConfig } from './print.js';
import { settingSources } from './sources.js';

const base = {
  VERIFIER_ISSUER: 'https://idp.example.test',
  VERIFIER_AUDIENCE: 'secret-gate-api',
};

const printed = (env: Record<string, string>) =>
  JSON.parse(printableConfig(loadConfig(env))) as Record<string, unknown>;

describe('--print-config', () => {
  it('prints the effective settings: variables, preset rows and defaults', () => {
    const config = printed({
      ...base,
      VERIFIER_PRESET: 'keycloak',
      VERIFIER_REQUIRED_SCOPES: 'a b',
    });
    expect(config).toMatchObject({
      issuers: {
        'https://idp.example.test': {
          audience: 'secret-gate-api',
          preset: 'keycloak',
          requireTyp: 'JWT',
        },
      },
      policies: { secret: { scopes: ['a', 'b'] } },
      cache: { maxTtl: 300 },
    });
  });

  it('redacts secrets and the credentials of a store URL', () => {
    const nonceKey = 'n'.repeat(40);
    const text = printableConfig(
      loadConfig({
        ...base,
        VERIFIER_DPOP_NONCE_KEY: nonceKey,
        VERIFIER_REDIS_PASSWORD: 'replay-pass',
        VERIFIER_REDIS_URL: 'rediss://user:store-pass@redis.example.test:6380',
        VERIFIER_SSF_TRANSMITTER: 'https://ssf.example.test',
        VERIFIER_SSF_AUDIENCE: 'gate',
        VERIFIER_SSF_POLL_TOKEN: 'poll-token-value',
      }),
    );
    for (const secret of [nonceKey, 'replay-pass', 'store-pass', 'poll-token-value'])
      expect(text).not.toContain(secret);
    expect(JSON.parse(text)).toMatchObject({
      dpop: { nonceKey: '[redacted]' },
      redis: {
        password: '[redacted]',
        url: 'rediss://[redacted]@redis.example.test:6380',
      },
      revocation: { logoutTokenMaxAge: 120, ssf: { pollToken: '[redacted]' } },
    });
  });
});

describe('where each setting came from', () => {
  it('names the variable that set it over the file, the file, and leaves defaults out', () => {
    const file = {
      logLevel: 'debug',
      cache: { maxTtl: '2m' },
      issuers: [{ issuer: 'https://idp.example.test', audience: 'api' }],
      policies: { secret: { issuers: ['https://idp.example.test'], scopes: ['a'] } },
    };
    const sources = settingSources({ VERIFIER_CONFIG: '/x.json', VERIFIER_LOG_LEVEL: 'warn' }, () =>
      JSON.stringify(file),
    );
    expect(sources).toEqual({
      'cache.maxTtl': 'file',
      'issuers[0].audience': 'file',
      'issuers[0].issuer': 'file',
      logLevel: 'env VERIFIER_LOG_LEVEL',
      'policies.secret.issuers': 'file',
      'policies.secret.scopes': 'file',
    });
    const config = loadConfig({ VERIFIER_CONFIG: '/x.json' }, () => JSON.stringify(file));
    const text = JSON.parse(printableConfig(config, sources)) as { $sources: unknown };
    expect(text.$sources).toEqual(sources);
  });
});

import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { redisSettingsOf } from '../redis/connection.js';
import { ConfigError, loadConfig } from './load.js';

const minimal = { VERIFIER_ISSUER: 'https://idp.test', VERIFIER_AUDIENCE: 'secret-gate-api' };

function problemsOf(env: Record<string, string>, file?: string): readonly string[] {
  try {
    loadConfig(env, () => {
      if (file === undefined) throw new Error('ENOENT');
      return file;
    });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toBeInstanceOf(TypeError);
    return (error as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

describe('configuration from the environment', () => {
  it('single-issuer mode defines one JWT issuer and the policy NGINX asks for (secret, also answered as default), with documented defaults', () => {
    const config = loadConfig({ ...minimal, VERIFIER_REQUIRED_SCOPES: 'secrets:read  openid' });
    expect(config.listen).toEqual({ kind: 'tcp', host: '127.0.0.1', port: 8090 });
    expect(config.issuers.get('https://idp.test')).toEqual({
      type: 'jwt',
      issuer: 'https://idp.test',
      audience: 'secret-gate-api',
      jwksUri: undefined,
      algorithms: ['RS256', 'ES256', 'PS256', 'EdDSA'],
      clockTolerance: 30,
      requireTyp: 'at+jwt',
      maxTokenAge: 86_400,
      allowHttp: false,
      clientClaims: ['azp', 'client_id', 'cid'],
      preset: 'rfc9068',
      scopeClaims: ['scope', 'scp'],
      audienceClaim: 'aud',
      requireClaims: [],
      refuseClaims: ['nonce', 'at_hash', 'events'],
      acrClaim: 'acr',
      amrClaim: 'amr',
      authTimeClaim: 'auth_time',
      logoutAudiences: [],
    });
    expect(config.metricsListen).toBeUndefined();
    const policy = {
      issuers: ['https://idp.test'],
      scopes: ['secrets:read', 'openid'],
      cloudfront: undefined,
      dpop: 'off',
      revocation: 'checked',
    };
    expect([...config.policies.values()]).toEqual([
      { name: 'secret', ...policy },
      { name: 'default', ...policy },
    ]);
    expect(config.cache).toEqual({
      maxEntries: 100_000,
      maxBytes: 64 * 1024 * 1024,
      maxTtl: 300,
      edgeTtl: 5,
    });
    expect(config.jwks).toEqual({ refresh: 600, cooldown: 30, maxStale: 86_400 });
    expect(config.revocation).toMatchObject({ maxLatency: 6 });
    expect(config.redis.url).toBeUndefined(); // both stores in process
    expect(config.revocation.ssf.transmitter).toBeUndefined();
  });

  it('reports every revocation setting problem at once', () => {
    expect(() =>
      loadConfig({
        ...minimal,
        VERIFIER_REDIS_URL: 'memcached://x',
        VERIFIER_REVOCATION_MAX_LATENCY: '0s',
        VERIFIER_SSF_TRANSMITTER: 'http://ssf.example.com',
      }),
    ).toThrow(
      /VERIFIER_REDIS_URL[\s\S]*VERIFIER_REVOCATION_MAX_LATENCY[\s\S]*audience[^\n]*required with a transmitter[\s\S]*VERIFIER_SSF_TRANSMITTER: [^\n]*plain http/,
    );
  });

  it('is frozen', () => {
    const config = loadConfig(minimal);
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.cache)).toBe(true);
    expect(() => (config.policies as Map<string, unknown>).set('x', {})).toThrow(TypeError);
  });

  it('reads durations, sizes and unix sockets', () => {
    const config = loadConfig({
      ...minimal,
      VERIFIER_LISTEN: 'unix:/run/verifier.sock',
      VERIFIER_CLOCK_TOLERANCE: '500ms',
      VERIFIER_JWKS_REFRESH: '2m',
      VERIFIER_JWKS_MAX_STALE: '1h',
      VERIFIER_CACHE_MAX_BYTES: '16k',
    });
    expect(config.listen).toEqual({ kind: 'unix', path: '/run/verifier.sock' });
    expect(config.issuers.get('https://idp.test')).toMatchObject({ clockTolerance: 0.5 });
    expect(config.jwks).toMatchObject({ refresh: 120, maxStale: 3600 });
    expect(config.cache.maxBytes).toBe(16 * 1024);
  });

  it('follows the configuration file every second, a change taken once it holds for 200 ms, unless set otherwise', () => {
    expect(loadConfig(minimal).reload).toEqual({ poll: 1, settle: 0.2 });
    expect(
      loadConfig({ ...minimal, VERIFIER_RELOAD_POLL: '250ms', VERIFIER_RELOAD_SETTLE: '0' }).reload,
    ).toEqual({ poll: 0.25, settle: 0 });
    expect(() => loadConfig({ ...minimal, VERIFIER_RELOAD_POLL: '0s' })).toThrow(
      /VERIFIER_RELOAD_POLL.*must be greater than 0/,
    );
  });

  it('reports every problem in one error', () => {
    const problems = problemsOf({
      VERIFIER_ISSUER: 'not a url',
      VERIFIER_ALGORITHMS: 'RS256,HS256,none',
      VERIFIER_LISTEN: 'localhost',
      VERIFIER_LOG_LEVEL: 'loud',
      VERIFIER_CACHE_MAX_ENTRIES: '-3',
      VERIFIER_JWKS_COOLDOWN: 'soon',
      VERIFIER_DPOP: 'fast',
      VERIFIER_TYPO: '1',
    });
    expect(problems).toEqual([
      expect.stringMatching(/^VERIFIER_TYPO: unknown variable/),
      'VERIFIER_LISTEN: expected host:port or unix:/path, got "localhost"',
      expect.stringMatching(/^VERIFIER_LOG_LEVEL: expected one of/),
      'VERIFIER_CACHE_MAX_ENTRIES: expected a positive integer, got "-3"',
      'VERIFIER_JWKS_COOLDOWN: expected a duration such as 30, 30s, 10m or 24h, got "soon"',
      'VERIFIER_ISSUER: expected an absolute http(s) URL, got "not a url"',
      'VERIFIER_AUDIENCE: required with VERIFIER_ISSUER',
      expect.stringMatching(/^VERIFIER_ALGORITHMS: "HS256" is not allowed \(asymmetric only/),
      expect.stringMatching(/^VERIFIER_ALGORITHMS: "none" is not allowed/),
      'VERIFIER_DPOP: expected off, allowed or required, got "fast"',
    ]);
  });

  it('needs an issuer or a config file', () => {
    expect(problemsOf({})).toEqual(['VERIFIER_ISSUER or VERIFIER_CONFIG: one of them is required']);
  });
});

describe('configuration from a file', () => {
  const file = {
    issuers: [
      { issuer: 'https://a.test', audience: 'api', algorithms: ['ES256'], requireTyp: 'at+jwt' },
      {
        type: 'introspection',
        issuer: 'https://b.test',
        clientId: 'gate',
        clientSecret: 's3cret',
        audience: 'api',
        cacheTtl: '30s',
      },
      { type: 'tokeninfo', preset: 'google', issuer: 'https://c.test', audience: 'spa' },
    ],
    policies: {
      secret: { issuers: ['https://a.test', 'https://b.test'], scopes: ['secrets:read'] },
      profile: { issuers: ['https://c.test'] },
    },
  };

  it('defines several issuers and named policies', () => {
    const config = loadConfig({ VERIFIER_CONFIG: '/etc/verifier.json' }, () =>
      JSON.stringify(file),
    );
    expect([...config.issuers.keys()]).toEqual([
      'https://a.test',
      'https://b.test',
      'https://c.test',
    ]);
    expect(config.issuers.get('https://b.test')).toMatchObject({
      type: 'introspection',
      cacheTtl: 30,
      timeout: 5,
    });
    expect(config.policies.get('secret')).toMatchObject({
      issuers: ['https://a.test', 'https://b.test'],
      scopes: ['secrets:read'],
    });
    expect(config.policies.get('profile')).toMatchObject({ scopes: [] });
  });

  it('accepts a token-exchange value: its token endpoint comes from discovery when it mints, not at the start', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sg-config-exchange-'));
    try {
      const secretFile = join(dir, 'client.secret');
      writeFileSync(secretFile, 'gate-secret', { mode: 0o600 });
      const mint = {
        'partner-token': {
          kind: 'token-exchange',
          clientId: 'gate',
          clientAuth: { method: 'client_secret_basic', secretFile },
          audience: 'partner-api',
        },
      };
      const withMint = { ...file, policies: { secret: { ...file.policies.secret, mint } } };
      const config = loadConfig({ VERIFIER_CONFIG: '/etc/verifier.json' }, () =>
        JSON.stringify(withMint),
      );
      expect(Object.keys(config.policies.get('secret')?.mint ?? {})).toEqual(['partner-token']);
      // The start still catches a client key file others can read.
      rmSync(secretFile);
      writeFileSync(secretFile, 'gate-secret', { mode: 0o644 });
      expect(() =>
        loadConfig({ VERIFIER_CONFIG: '/etc/verifier.json' }, () => JSON.stringify(withMint)),
      ).toThrow(/partner-token/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reports every problem in the file together, including unknown fields', () => {
    const broken = {
      issuers: [
        { issuer: 'https://a.test', audience: 'api', algorithms: ['HS256'], audiense: 'typo' },
        { type: 'introspection', issuer: 'https://b.test' },
        { type: 'tokeninfo', preset: 'google', issuer: 'https://c.test', audience: 'spa' },
        { type: 'saml', issuer: 'https://d.test' },
      ],
      policies: {
        secret: { issuers: ['https://missing.test'], scope: ['x'] },
        both: { issuers: ['https://b.test', 'https://c.test'] },
      },
      extra: true,
    };
    const problems = problemsOf(
      { VERIFIER_CONFIG: '/x.json', VERIFIER_AUDIENCE: 'api' },
      JSON.stringify(broken),
    );
    expect(problems).toEqual([
      'VERIFIER_AUDIENCE: not used together with VERIFIER_CONFIG (put it in the file)',
      expect.stringMatching(/^config: unknown field "extra"/),
      expect.stringMatching(/^config.issuers\[0\]: unknown field "audiense"/),
      expect.stringMatching(/^config.issuers\[0\].algorithms: "HS256" is not allowed/),
      'config.issuers[1].clientId: a non-empty string is required',
      'config.issuers[1].clientSecret: a secret (a string, { "file": PATH } or { "env": NAME }) is required',
      'config.issuers[1].audience: a non-empty string is required',
      'config.issuers[3].type: expected "jwt", "introspection" or "tokeninfo"',
      expect.stringMatching(/^config.policies.secret: unknown field "scope"/),
      'config.policies.secret.issuers: "https://missing.test" is not a configured issuer',
      'config.policies.both.issuers: at most one introspection/tokeninfo issuer per policy',
    ]);
  });

  it('refuses a "userinfo" issuer (a kind that cannot tell this app\'s tokens from another app\'s), naming the kinds', () => {
    const document = {
      issuers: [
        { type: 'userinfo', issuer: 'https://c.test', endpoint: 'https://c.test/userinfo' },
      ],
      policies: { default: { issuers: ['https://c.test'] } },
    };
    expect(problemsOf({ VERIFIER_CONFIG: '/x.json' }, JSON.stringify(document))).toEqual([
      'config.issuers[0].type: expected "jwt", "introspection" or "tokeninfo"',
    ]);
  });

  it('names a policy name it refuses, an issuer that is not an object and a duplicate issuer', () => {
    const issuer = { issuer: 'https://a.test', audience: 'api' };
    const document = {
      issuers: ['https://a.test', issuer, issuer],
      policies: { 'bad name': { issuers: ['https://a.test'] }, ok: 5 },
    };
    expect(problemsOf({ VERIFIER_CONFIG: '/x.json' }, JSON.stringify(document))).toEqual([
      'config.policies.bad name: policy names use A-Z a-z 0-9 _ . - only',
      'config.issuers[0]: expected an object',
      'config.issuers[2]: duplicate issuer "https://a.test"',
      'config.policies.ok: expected an object',
    ]);
    expect(
      problemsOf({ VERIFIER_CONFIG: '/x.json' }, JSON.stringify({ issuers: [], policies: {} })),
    ).toEqual([
      'config.issuers: at least one issuer is required',
      'config.policies: at least one policy is required',
    ]);
  });

  it('reports an unreadable or invalid file', () => {
    expect(problemsOf({ VERIFIER_CONFIG: '/nope.json' })).toEqual([
      expect.stringMatching(/^VERIFIER_CONFIG: cannot read "\/nope.json"/),
    ]);
    expect(problemsOf({ VERIFIER_CONFIG: '/bad.json' }, '{ not json')).toEqual([
      expect.stringMatching(/^VERIFIER_CONFIG: not valid JSON/),
    ]);
  });

  it('hands a policy cloudfront block to the signer validation and reports its problems', () => {
    const withCloudFront = {
      issuers: [{ issuer: 'https://a.test', audience: 'api' }],
      policies: {
        secret: { issuers: ['https://a.test'], cloudfront: { keyPairId: 'K1', ttlSeconds: 0 } },
      },
    };
    const problems = problemsOf({ VERIFIER_CONFIG: '/x.json' }, JSON.stringify(withCloudFront));
    expect(problems.length).toBeGreaterThan(0);
    expect(
      problems.every((problem) => problem.startsWith('config.policies.secret.cloudfront')),
    ).toBe(true);
  });
});

describe('issuer hardening settings', () => {
  const introspection = (extra: Record<string, unknown> = {}) => ({
    issuers: [
      {
        type: 'introspection',
        issuer: 'https://as.test',
        endpoint: 'https://as.test/introspect',
        clientId: 'gate',
        clientSecret: 's3cret',
        audience: 'secret-gate-api',
        ...extra,
      },
    ],
    policies: { secret: { issuers: ['https://as.test'] } },
  });
  const read = (files: Record<string, string>) => (path: string) => {
    const text = files[path];
    if (text === undefined) throw Object.assign(new Error('gone'), { code: 'ENOENT' });
    return text;
  };

  it('refuses to start an introspection issuer without an audience', () => {
    const { audience: _audience, ...noAudience } = introspection().issuers[0]!;
    const document = { ...introspection(), issuers: [noAudience] };
    expect(problemsOf({ VERIFIER_CONFIG: '/x.json' }, JSON.stringify(document))).toEqual([
      'config.issuers[0].audience: a non-empty string is required',
    ]);
  });

  it('reads the introspection client secret from a file (a mounted Kubernetes Secret) or a variable', () => {
    const fromFile = loadConfig(
      { VERIFIER_CONFIG: '/x.json' },
      read({
        '/x.json': JSON.stringify(introspection({ clientSecret: { file: '/run/secrets/cs' } })),
        '/run/secrets/cs': 'from-the-file\n',
      }),
    );
    expect(fromFile.issuers.get('https://as.test')).toMatchObject({
      clientSecret: 'from-the-file',
    });
    const fromEnv = loadConfig(
      { VERIFIER_CONFIG: '/x.json', INTROSPECTION_SECRET: 'from-the-env' },
      read({
        '/x.json': JSON.stringify(introspection({ clientSecret: { env: 'INTROSPECTION_SECRET' } })),
      }),
    );
    expect(fromEnv.issuers.get('https://as.test')).toMatchObject({ clientSecret: 'from-the-env' });
  });

  it('reports a secret file or variable that is missing, never quoting a value', () => {
    const problems = problemsOfReader(
      { VERIFIER_CONFIG: '/x.json' },
      read({
        '/x.json': JSON.stringify({
          ...introspection({ clientSecret: { file: '/run/secrets/none' } }),
          issuers: [
            introspection({ clientSecret: { file: '/run/secrets/none' } }).issuers[0],
            {
              ...introspection({ clientSecret: { env: 'UNSET_SECRET' } }).issuers[0],
              issuer: 'https://b.test',
            },
            {
              ...introspection({ clientSecret: { env: 'VERIFIER_SECRET' } }).issuers[0],
              issuer: 'https://c.test',
            },
          ],
        }),
      }),
    );
    expect(problems).toEqual([
      'config.issuers[2].clientSecret: "VERIFIER_SECRET": choose a variable name outside the VERIFIER_ prefix',
      'config.issuers[0].clientSecret: cannot read "/run/secrets/none" (ENOENT)',
      'config.issuers[1].clientSecret: variable UNSET_SECRET is not set',
    ]);
  });

  it('refuses plain http to a host that is not loopback unless the issuer opts in', () => {
    expect(problemsOf({ VERIFIER_ISSUER: 'http://idp.example', VERIFIER_AUDIENCE: 'api' })).toEqual(
      [
        'VERIFIER_ISSUER: "http://idp.example" is plain http to a host that is not loopback; use https, or set "allowHttp": true on this issuer',
      ],
    );
    expect(
      problemsOf(
        { VERIFIER_CONFIG: '/x.json' },
        JSON.stringify(introspection({ endpoint: 'http://as.test/i' })),
      ),
    ).toEqual([
      'config.issuers[0].endpoint: "http://as.test/i" is plain http to a host that is not loopback; use https, or set "allowHttp": true on this issuer',
    ]);
    for (const host of ['127.0.0.1:9000', 'localhost:9000', '[::1]:9000'])
      expect(() =>
        loadConfig({ VERIFIER_ISSUER: `http://${host}`, VERIFIER_AUDIENCE: 'api' }),
      ).not.toThrow();
    const optedIn = loadConfig({
      VERIFIER_ISSUER: 'http://idp.example',
      VERIFIER_AUDIENCE: 'api',
      VERIFIER_ALLOW_HTTP: 'true',
    });
    expect(optedIn.issuers.get('http://idp.example')).toMatchObject({ allowHttp: true });
  });

  it('requires typ at+jwt by default, with an explicit opt-out, and bounds token age', () => {
    const off = loadConfig({
      ...minimal,
      VERIFIER_REQUIRE_TYP: 'off',
      VERIFIER_MAX_TOKEN_AGE: '1h',
    });
    expect(off.issuers.get('https://idp.test')).toMatchObject({
      requireTyp: undefined,
      maxTokenAge: 3600,
    });
    const fileOff = loadConfig({ VERIFIER_CONFIG: '/x.json' }, () =>
      JSON.stringify({
        issuers: [{ issuer: 'https://a.test', audience: 'api', requireTyp: false }],
        policies: { p: { issuers: ['https://a.test'] } },
      }),
    );
    expect(fileOff.issuers.get('https://a.test')).toMatchObject({ requireTyp: undefined });
    expect(problemsOf({ ...minimal, VERIFIER_MAX_TOKEN_AGE: '0' })).toEqual([
      'VERIFIER_MAX_TOKEN_AGE: must be greater than 0',
    ]);
  });

  it('serves /metrics on its own listener only when it differs from the main one', () => {
    const config = loadConfig({ ...minimal, VERIFIER_METRICS_LISTEN: '127.0.0.1:9464' });
    expect(config.metricsListen).toEqual({ kind: 'tcp', host: '127.0.0.1', port: 9464 });
    expect(
      problemsOf({
        ...minimal,
        VERIFIER_LISTEN: '127.0.0.1:9000',
        VERIFIER_METRICS_LISTEN: '127.0.0.1:9000',
      }),
    ).toEqual(['VERIFIER_METRICS_LISTEN: must differ from VERIFIER_LISTEN']);
  });

  it('says the rules between settings in the same pass as the problems of each value', () => {
    // Before, a rule was checked only once every top-level setting was valid on its own.
    expect(
      problemsOf({
        ...minimal,
        VERIFIER_CACHE_MAX_ENTRIES: 'lots',
        VERIFIER_JWKS_REFRESH: '2h',
        VERIFIER_JWKS_MAX_STALE: '1h',
        VERIFIER_LISTEN: '127.0.0.1:9000',
        VERIFIER_METRICS_LISTEN: '127.0.0.1:9000',
        VERIFIER_REDIS_URL: 'redis://cache:6379',
      }),
    ).toEqual([
      'VERIFIER_CACHE_MAX_ENTRIES: expected a positive integer, got "lots"',
      'VERIFIER_JWKS_MAX_STALE: must be at least VERIFIER_JWKS_REFRESH',
      'VERIFIER_METRICS_LISTEN: must differ from VERIFIER_LISTEN',
      'VERIFIER_REDIS_URL: plain redis to a host that is not loopback; use a rediss:// form, or opt in with "redis.allowPlaintext": true (VERIFIER_REDIS_ALLOW_PLAINTEXT=true)',
    ]);
    // A rule whose own settings are wrong is not run: their problems say enough.
    expect(problemsOf({ ...minimal, VERIFIER_JWKS_REFRESH: 'soon' })).toEqual([
      'VERIFIER_JWKS_REFRESH: expected a duration such as 30, 30s, 10m or 24h, got "soon"',
    ]);
  });

  it('takes an email subject issuer only among the configured JWT issuers', () => {
    const ssf = { VERIFIER_SSF_TRANSMITTER: 'https://tx.test', VERIFIER_SSF_AUDIENCE: 'gate' };
    const config = loadConfig({
      ...minimal,
      ...ssf,
      VERIFIER_SSF_EMAIL_ISSUER: 'https://idp.test',
    });
    expect(config.revocation.ssf.emailIssuer).toBe('https://idp.test');
    expect(
      problemsOf({ ...minimal, ...ssf, VERIFIER_SSF_EMAIL_ISSUER: 'https://other.test' }),
    ).toEqual(['VERIFIER_SSF_EMAIL_ISSUER: must be a configured issuer of JWT access tokens']);
  });
});

describe('one configuration model', () => {
  it('the variables and the file are two spellings of one document', () => {
    const fromEnv = loadConfig({
      VERIFIER_ISSUER: 'https://a.test',
      VERIFIER_AUDIENCE: 'api',
      VERIFIER_ALGORITHMS: 'ES256 RS256',
      VERIFIER_REQUIRED_SCOPES: 'secrets:read',
      VERIFIER_CACHE_MAX_TTL: '1m',
    });
    const fromFile = loadConfig({ VERIFIER_CONFIG: '/etc/verifier.json' }, () =>
      JSON.stringify({
        cache: { maxTtl: '1m' },
        issuers: [{ issuer: 'https://a.test', audience: 'api', algorithms: ['ES256', 'RS256'] }],
        policies: {
          secret: { issuers: ['https://a.test'], scopes: ['secrets:read'] },
          default: { issuers: ['https://a.test'], scopes: ['secrets:read'] },
        },
      }),
    );
    expect(fromFile).toEqual(fromEnv);
  });

  it('a configuration without a setting gets its default, from the file as from the variables', () => {
    const config = loadConfig(minimal);
    expect(config.issuers.get('https://idp.test')).toMatchObject({
      clockTolerance: 30,
      algorithms: ['RS256', 'ES256', 'PS256', 'EdDSA'],
    });
    expect(config).toMatchObject({
      listen: { kind: 'tcp', host: '127.0.0.1', port: 8090 },
      cache: { maxBytes: 64 * 1024 * 1024 },
      fetchTimeout: 5,
    });
    const file = loadConfig({ VERIFIER_CONFIG: '/x.json' }, () =>
      JSON.stringify({
        issuers: [{ issuer: 'https://idp.test', audience: 'secret-gate-api' }],
        policies: { default: { issuers: ['https://idp.test'] } },
      }),
    );
    expect(file.issuers.get('https://idp.test')).toEqual(config.issuers.get('https://idp.test'));
  });

  it('top-level settings may sit in the file; a variable wins over the file', () => {
    const config = loadConfig({ VERIFIER_CONFIG: '/x.json', VERIFIER_CACHE_MAX_ENTRIES: '7' }, () =>
      JSON.stringify({
        $schema: '../verifier/config.schema.json',
        logLevel: 'warn',
        cache: { maxEntries: 5, maxTtl: '2m' },
        issuers: [{ issuer: 'https://a.test', audience: 'api' }],
        policies: { p: { issuers: ['https://a.test'] } },
      }),
    );
    expect(config.logLevel).toBe('warn');
    expect(config.cache).toMatchObject({ maxEntries: 7, maxTtl: 120 });
  });

  it('reads the files a section names only through the one reader, after validation', () => {
    const fixtures = new URL('../../../test/fixtures/cloudfront/', import.meta.url);
    const keyPath = '/keys/cf.pem';
    const key = readFileSync(new URL('rsa-2048.pkcs8.pem', fixtures), 'utf8');
    const reads: string[] = [];
    const document = {
      issuers: [{ issuer: 'https://a.test', audience: 'api' }],
      policies: {
        secret: {
          issuers: ['https://a.test'],
          cloudfront: {
            keyPairId: 'K1',
            privateKeyFile: keyPath,
            resource: 'https://cdn.test/*',
            ttlSeconds: 60,
          },
        },
      },
    };
    const config = loadConfig({ VERIFIER_CONFIG: '/x.json' }, (path) => {
      reads.push(path);
      return path === keyPath ? key : JSON.stringify(document);
    });
    expect(reads).toEqual(['/x.json', keyPath]);
    expect(config.policies.get('secret')?.cloudfront?.privateKey.type).toBe('private');
    expect(Object.isFrozen(config.policies.get('secret')?.cloudfront)).toBe(true);

    // A document with a problem elsewhere still has its key checked, so one pass shows both.
    reads.length = 0;
    const broken = { ...document, listen: 'nowhere' };
    expect(
      problemsOfReader({ VERIFIER_CONFIG: '/x.json' }, (path) => {
        reads.push(path);
        if (path === keyPath) throw Object.assign(new Error('gone'), { code: 'ENOENT' });
        return JSON.stringify(broken);
      }),
    ).toEqual([
      'config.listen: expected host:port or unix:/path, got "nowhere"',
      'config.policies.secret.cloudfront.privateKeyFile: cannot read "/keys/cf.pem" (ENOENT)',
    ]);
  });
});

function problemsOfReader(env: Record<string, string>, read: (path: string) => string) {
  try {
    loadConfig(env, read);
  } catch (error) {
    return (error as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

describe('DPoP settings', () => {
  const single = { VERIFIER_ISSUER: 'https://idp.test', VERIFIER_AUDIENCE: 'api' };

  it('defaults to off, an in-process replay store, a 60 s window and no nonces', () => {
    const config = loadConfig(single);
    expect(config.policies.get('default')?.dpop).toBe('off');
    expect(config.dpop).toEqual({
      algorithms: ['ES256', 'ES384', 'PS256', 'RS256', 'EdDSA'],
      iatWindow: 60,
      replayMaxEntries: 1_000_000,
      nonceKey: undefined,
    });
    expect(config.redis.url).toBeUndefined();
    expect(config.redis.password).toBeUndefined();
    expect(config.redis.allowPlaintext).toBe(false);
  });

  it('reads the policy mode from VERIFIER_DPOP and the file, and a Redis store URL', () => {
    const env = loadConfig({
      ...single,
      VERIFIER_DPOP: 'required',
      VERIFIER_REDIS_URL: 'rediss://cache:6379',
    });
    expect(env.policies.get('default')?.dpop).toBe('required');
    expect(env.redis.url).toBe('rediss://cache:6379');
    const file = {
      issuers: [{ issuer: 'https://idp.test', audience: 'api' }],
      policies: { secret: { issuers: ['https://idp.test'], dpop: 'allowed' } },
    };
    const fromFile = loadConfig({ VERIFIER_CONFIG: '/x.json' }, () => JSON.stringify(file));
    expect(fromFile.policies.get('secret')?.dpop).toBe('allowed');
  });

  it.each([
    ['redis://cache:6379', false],
    ['redis://10.0.0.7:6379/2', false],
    ['redis://user:pw@cache.internal', false],
    ['redis+sentinel://127.0.0.1:26379,10.0.0.8:26379/gate', false],
    ['redis+cluster://cache-0:6379,cache-1:6379', false],
    ['redis://127.0.0.1:6379', true],
    ['redis+sentinel://127.0.0.1:26379,localhost:26380/gate', true],
    ['rediss+cluster://cache-0:6379,cache-1:6379', true],
    ['redis://localhost:6379', true],
    ['redis://[::1]:6379', true],
    ['rediss://cache:6379', true],
  ])('a store at %s is accepted without opting in to plaintext: %s', (url, accepted) => {
    for (const name of ['VERIFIER_REDIS_URL']) {
      const env = { ...single, [name]: url };
      if (accepted) expect(loadConfig(env).redis.url).toBe(url);
      else
        expect(problemsOf(env)).toEqual([
          `${name}: plain redis to a host that is not loopback; use a rediss:// form, or opt in with "redis.allowPlaintext": true (VERIFIER_REDIS_ALLOW_PLAINTEXT=true)`,
        ]);
    }
  });

  it.each([
    [
      'memcached://cache:11211',
      'unknown scheme "memcached://"; expected one of redis://, rediss://',
    ],
    [
      'redis+sentinel://s1:26379,s2:26379',
      'redis+sentinel:// needs the master name after the hosts',
    ],
    ['redis+sentinel:///gate', 'redis+sentinel:// names no host'],
    ['redis+cluster://', 'redis+cluster:// names no host'],
    ['redis://[not-a-host', '"[not-a-host" is not a host[:port]'],
  ])('refuses the store URL %s at start with one line', (url, problem) => {
    for (const [name, env] of [
      ['VERIFIER_REDIS_URL', { ...single, VERIFIER_REDIS_URL: url }],
    ] as const) {
      const problems = problemsOf(env);
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(new RegExp(`^${name}: `));
      expect(problems[0]).toContain(problem);
    }
  });

  it.each(['abc', '17', '-1'])('refuses %s replicas to wait for', (value) => {
    expect(problemsOf({ ...single, VERIFIER_REDIS_WAIT_REPLICAS: value })).toEqual([
      `VERIFIER_REDIS_WAIT_REPLICAS: expected a number of replicas from 0 to 16, got "${value}"`,
    ]);
  });

  it('reads one redis section for both stores', () => {
    const files: Record<string, string> = {
      '/x.json': JSON.stringify({
        issuers: [{ issuer: 'https://idp.test', audience: 'api' }],
        policies: { secret: { issuers: ['https://idp.test'], dpop: 'required' } },
        redis: {
          url: 'redis+cluster://cache-0,cache-1',
          username: 'gate',
          password: { file: '/run/secrets/redis-password' },
          caFile: '/etc/redis-ca/ca.crt',
          allowPlaintext: true,
          waitReplicas: 2,
          waitTimeout: '50ms',
        },
      }),
      '/run/secrets/redis-password': 'from-the-file\n',
      '/etc/redis-ca/ca.crt': '-----BEGIN CERTIFICATE-----\n',
    };
    const config = loadConfig({ VERIFIER_CONFIG: '/x.json' }, (path) => files[path] ?? '');
    expect(config.redis).toEqual({
      url: 'redis+cluster://cache-0,cache-1',
      username: 'gate',
      password: 'from-the-file',
      sentinelPassword: undefined,
      caFile: '-----BEGIN CERTIFICATE-----\n',
      allowPlaintext: true,
      waitReplicas: 2,
      waitTimeout: 0.05,
    });
    expect(redisSettingsOf(config)).toMatchObject({
      url: 'redis+cluster://cache-0,cache-1',
      password: 'from-the-file',
      waitReplicas: 2,
    });
  });

  it('refuses each removed store name at start, naming the setting that replaced it, never the value', () => {
    expect(
      problemsOf({
        ...single,
        VERIFIER_DPOP_REPLAY_STORE: 'redis://cache:6379',
        VERIFIER_DPOP_REPLAY_PASSWORD: 'old-password',
        VERIFIER_DPOP_REPLAY_ALLOW_PLAINTEXT: 'true',
        VERIFIER_REVOCATION_STORE: 'memory',
      }),
    ).toEqual([
      'VERIFIER_DPOP_REPLAY_STORE: removed; use VERIFIER_REDIS_URL (it serves both stores)',
      'VERIFIER_DPOP_REPLAY_PASSWORD: removed; use VERIFIER_REDIS_PASSWORD (it serves both stores)',
      'VERIFIER_DPOP_REPLAY_ALLOW_PLAINTEXT: removed; use VERIFIER_REDIS_ALLOW_PLAINTEXT (it serves both stores)',
      'VERIFIER_REVOCATION_STORE: removed; use VERIFIER_REDIS_URL (it serves both stores)',
    ]);
    // In the file, the lines name the settings as the file spells them, beside its other problems.
    const file = {
      issuers: [{ issuer: 'https://idp.test', audience: 'api' }],
      policies: { secret: { issuers: ['https://idp.test'] } },
      revocation: { store: 'redis://cache:6379' },
      dpop: { replayPassword: 'old-password', iatWindow: '1h' },
    };
    expect(problemsOfReader({ VERIFIER_CONFIG: '/x.json' }, () => JSON.stringify(file))).toEqual([
      'config.dpop.replayPassword: removed; use config.redis.password (it serves both stores)',
      'config.revocation.store: removed; use config.redis.url (it serves both stores)',
      'config.dpop.iatWindow: must be between 1s and 10m',
    ]);
  });

  it('takes plain redis:// to another host only when the operator opts in', () => {
    for (const [url, allow] of [
      ['VERIFIER_REDIS_URL', 'VERIFIER_REDIS_ALLOW_PLAINTEXT'],
    ] as const) {
      const config = loadConfig({ ...single, [url]: 'redis://cache:6379', [allow]: 'true' });
      expect(config.redis).toMatchObject({ url: 'redis://cache:6379', allowPlaintext: true });
    }
  });

  it('reads the store password and the nonce key from files or variables, like the introspection secret', () => {
    const files: Record<string, string> = {
      '/x.json': JSON.stringify({
        issuers: [{ issuer: 'https://idp.test', audience: 'api' }],
        policies: { secret: { issuers: ['https://idp.test'], dpop: 'required' } },
        dpop: { nonceKey: { env: 'DPOP_NONCE_KEY' } },
        redis: { url: 'rediss://cache:6379', password: { file: '/run/secrets/redis-password' } },
      }),
      '/run/secrets/redis-password': 'from-the-file\n',
    };
    const config = loadConfig(
      { VERIFIER_CONFIG: '/x.json', DPOP_NONCE_KEY: 'k'.repeat(32) },
      (path) => files[path] ?? '',
    );
    expect(config.redis.password).toBe('from-the-file');
    expect(config.dpop.nonceKey).toBe('k'.repeat(32));
    const fromVariables = loadConfig({
      ...single,
      VERIFIER_REDIS_PASSWORD: 'inline-password',
      VERIFIER_DPOP_NONCE_KEY: 'n'.repeat(40),
    });
    expect(fromVariables.redis.password).toBe('inline-password');
    expect(fromVariables.dpop.nonceKey).toBe('n'.repeat(40));
  });

  it('checks the nonce key length on the value a file holds, never quoting it', () => {
    const problems = problemsOfReader({ VERIFIER_CONFIG: '/x.json' }, (path) =>
      path === '/x.json'
        ? JSON.stringify({
            issuers: [{ issuer: 'https://idp.test', audience: 'api' }],
            policies: { default: { issuers: ['https://idp.test'] } },
            dpop: { nonceKey: { file: '/run/secrets/nonce' } },
          })
        : 'too-short-key\n',
    );
    expect(problems).toEqual(['config.dpop.nonceKey: must be at least 32 bytes']);
  });

  it('names every bad DPoP setting at once', () => {
    const problems = problemsOf({
      ...single,
      VERIFIER_DPOP: 'sometimes',
      VERIFIER_DPOP_ALGORITHMS: 'HS256',
      VERIFIER_DPOP_IAT_WINDOW: '1h',
      VERIFIER_REDIS_URL: 'memcached://x',
      VERIFIER_DPOP_NONCE_KEY: 'short',
    });
    expect(problems).toHaveLength(5);
    for (const name of [
      'VERIFIER_DPOP:',
      'VERIFIER_DPOP_ALGORITHMS',
      'VERIFIER_DPOP_IAT_WINDOW: must be between 1s and 10m',
      'VERIFIER_REDIS_URL: unknown scheme "memcached://"',
      'VERIFIER_DPOP_NONCE_KEY: must be at least 32 bytes',
    ])
      expect(problems.some((problem) => problem.startsWith(name))).toBe(true);
  });
});

describe('bounds on token settings', () => {
  it('refuses a clock tolerance over 5 minutes at start, naming the variable and why', () => {
    expect(
      loadConfig({ ...minimal, VERIFIER_CLOCK_TOLERANCE: '5m' }).issuers.get('https://idp.test'),
    ).toMatchObject({ clockTolerance: 300 });
    expect(problemsOf({ ...minimal, VERIFIER_CLOCK_TOLERANCE: '301s' })).toEqual([
      'VERIFIER_CLOCK_TOLERANCE: must be at most 300s (5m): a token is accepted this long after its "exp"',
    ]);
    const file = JSON.stringify({
      issuers: [{ issuer: 'https://idp.test', audience: 'api', clockTolerance: '1h' }],
      policies: { default: { issuers: ['https://idp.test'] } },
    });
    expect(problemsOf({ VERIFIER_CONFIG: '/c.json' }, file)).toEqual([
      'config.issuers[0].clockTolerance: must be at most 300s (5m): a token is accepted this long after its "exp"',
    ]);
  });

  it("reads a policy's clients from the file or VERIFIER_ALLOWED_CLIENTS, and refuses an empty list", () => {
    const clientsOf = (config: ReturnType<typeof loadConfig>) =>
      [...config.policies.values()].map(({ name, clients }) => [name, clients]);
    expect(
      clientsOf(loadConfig({ ...minimal, VERIFIER_ALLOWED_CLIENTS: 'spa-demo,admin' })),
    ).toEqual([
      ['secret', ['spa-demo', 'admin']],
      ['default', ['spa-demo', 'admin']],
    ]);
    expect(clientsOf(loadConfig(minimal))).toEqual([
      ['secret', undefined],
      ['default', undefined],
    ]);
    const file = (clients: unknown) =>
      JSON.stringify({
        issuers: [{ issuer: 'https://idp.test', audience: 'api' }],
        policies: { default: { issuers: ['https://idp.test'], clients } },
      });
    expect(problemsOf({ VERIFIER_CONFIG: '/c.json' }, file([]))).toEqual([
      'config.policies.default.clients: at least one client is required',
    ]);
  });
});

describe("NGINX's edge key", () => {
  const key = 'e'.repeat(64);
  const read = (content: string) => (path: string) => {
    if (path === '/run/secret-gate/edge-key') return content;
    throw Object.assign(new Error('no such file'), { code: 'ENOENT' });
  };

  it('is read once from the file VERIFIER_EDGE_KEY_FILE names, one trailing newline dropped', () => {
    const env = { ...minimal, VERIFIER_EDGE_KEY_FILE: '/run/secret-gate/edge-key' };
    expect(loadConfig(env, read(`${key}\n`)).edgeKeyFile).toBe(key);
    expect(loadConfig(minimal).edgeKeyFile).toBeUndefined();
  });

  it('refuses a relative path, a missing file, an empty one and a short key, never quoting it', () => {
    const problems = (path: string, content: string) => {
      try {
        loadConfig({ ...minimal, VERIFIER_EDGE_KEY_FILE: path }, read(content));
      } catch (error) {
        return (error as ConfigError).problems;
      }
      throw new Error('expected a ConfigError');
    };
    expect(problems('edge-key', key)).toEqual([
      'VERIFIER_EDGE_KEY_FILE: expected an absolute path, got "edge-key"',
    ]);
    expect(problems('/run/other', key)).toEqual([
      'VERIFIER_EDGE_KEY_FILE: cannot read "/run/other" (ENOENT)',
    ]);
    expect(problems('/run/secret-gate/edge-key', '\n')).toEqual([
      'VERIFIER_EDGE_KEY_FILE: "/run/secret-gate/edge-key" is empty',
    ]);
    const short = problems('/run/secret-gate/edge-key', 'short-key-31-bytes-long-0123456');
    expect(short).toEqual([
      'VERIFIER_EDGE_KEY_FILE: "/run/secret-gate/edge-key" must hold at least 32 bytes',
    ]);
  });
});

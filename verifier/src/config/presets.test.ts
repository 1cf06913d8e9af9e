// The presets as a conformance table: for each IdP, tokens shaped as its documentation shows them
// (the page is cited on each row), through the whole verifier (config from VERIFIER_* variables,
// a JWKS server, jose, the authorizer). Each preset accepts its access token with the right client
// and scopes, and refuses its ID token, a token for another API, a token without the scope and a
// token naming no client; no preset accepts any IdP's ID token.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, loadConfig } from './load.js';
import type { Decision } from '../decision/decision.js';
import { PRESET_NAMES, type PresetName } from './presets.js';
import { answerOf, verdictOf } from '../testing/answer.js';
import {
  manualClock,
  PRIVATE_JWKS,
  signRs256,
  startJwksServer,
  type JwksServer,
} from '../testing/fixtures.js';
import { buildService, type TestService } from '../testing/service.js';

const clock = manualClock();
const T = clock.seconds();
const KID = PRIVATE_JWKS.rsaA.kid;

type Claims = Record<string, unknown>;

interface Row {
  readonly name: string;
  readonly preset: PresetName;
  /** The vendor page the shapes follow. */
  readonly page: string;
  readonly issuer: string;
  readonly audience: string;
  /** The scope the policy requires, spelt as this IdP grants it. */
  readonly scope: string;
  readonly client: string;
  /** Header `typ` of its access tokens (undefined: none). */
  readonly typ: string | undefined;
  readonly access: Claims;
  /** Claims holding the client id and the scopes: removed for the "no client" and "no scope" rows. */
  readonly clientClaims: readonly string[];
  readonly scopeClaims: readonly string[];
  /** The same access token for another API of the same IdP. */
  readonly otherApi: Claims;
  readonly idTyp: string | undefined;
  /** Its ID token as documented, `nonce` and `at_hash` left out (the IdP's own discriminator). */
  readonly idToken: Claims;
  /**
   * False when nothing but `aud`, `nonce` and `at_hash` tells its ID token from its access token
   * (Auth0's default profile: docs/connect-your-idp.md recommends its RFC 9068 profile).
   */
  readonly discriminator?: false;
  /** True when the client claim is also what `audience` is matched against (Cognito). */
  readonly clientIsAudience?: true;
}

const times = { iat: T - 60, exp: T + 3600 };
const TENANT = '72f988bf-86f1-41af-91ab-2d7cd011db47';
const ENTRA_API = '6e74172b-be56-4843-9ff4-e66a39bb12e3';
const SPA = 'c44b4083-3bb0-49c1-b47d-974e53cbdf3c';

const rows: readonly Row[] = [
  {
    name: 'a generic RFC 9068 issuer',
    preset: 'rfc9068',
    page: 'https://www.rfc-editor.org/rfc/rfc9068#section-2',
    issuer: 'https://as.example.com',
    audience: 'https://api.example.com',
    scope: 'secrets:read',
    client: 'spa-1',
    typ: 'at+jwt',
    access: {
      iss: 'https://as.example.com',
      aud: 'https://api.example.com',
      sub: 'user-1',
      client_id: 'spa-1',
      jti: 'j-1',
      scope: 'openid secrets:read',
      ...times,
    },
    clientClaims: ['client_id'],
    scopeClaims: ['scope'],
    otherApi: { aud: 'https://other.example.com' },
    idTyp: 'JWT',
    idToken: { iss: 'https://as.example.com', aud: 'spa-1', sub: 'user-1', ...times },
  },
  {
    name: 'Auth0, default "Auth0" token profile',
    preset: 'auth0',
    page: 'https://auth0.com/docs/secure/tokens/access-tokens/access-token-profiles',
    issuer: 'https://acme.eu.auth0.com/',
    audience: 'https://secrets.acme.com',
    scope: 'read:secrets',
    client: 'QxO2kJ4E1ZcVh8',
    typ: 'JWT',
    access: {
      iss: 'https://acme.eu.auth0.com/',
      sub: 'auth0|5f7c8ec7c33c6c004bbafe82',
      aud: ['https://secrets.acme.com', 'https://acme.eu.auth0.com/userinfo'],
      azp: 'QxO2kJ4E1ZcVh8',
      scope: 'openid profile read:secrets',
      ...times,
    },
    clientClaims: ['azp'],
    scopeClaims: ['scope'],
    otherApi: { aud: ['https://billing.acme.com', 'https://acme.eu.auth0.com/userinfo'] },
    discriminator: false,
    idTyp: 'JWT',
    idToken: {
      iss: 'https://acme.eu.auth0.com/',
      sub: 'auth0|5f7c8ec7c33c6c004bbafe82',
      aud: 'QxO2kJ4E1ZcVh8',
      sid: 'Hb3lPkU9',
      name: 'Dana',
      ...times,
    },
  },
  {
    name: 'Auth0, "RFC 9068" token profile',
    preset: 'auth0-rfc9068',
    page: 'https://auth0.com/docs/secure/tokens/access-tokens/access-token-profiles',
    issuer: 'https://acme.eu.auth0.com/',
    audience: 'https://secrets.acme.com',
    scope: 'read:secrets',
    client: 'QxO2kJ4E1ZcVh8',
    typ: 'at+jwt',
    access: {
      iss: 'https://acme.eu.auth0.com/',
      sub: 'auth0|5f7c8ec7c33c6c004bbafe82',
      aud: ['https://secrets.acme.com', 'https://acme.eu.auth0.com/userinfo'],
      client_id: 'QxO2kJ4E1ZcVh8',
      jti: 'a1',
      scope: 'openid read:secrets',
      ...times,
    },
    clientClaims: ['client_id'],
    scopeClaims: ['scope'],
    otherApi: { aud: 'https://billing.acme.com' },
    idTyp: 'JWT',
    idToken: {
      iss: 'https://acme.eu.auth0.com/',
      sub: 'auth0|5f7c8ec7c33c6c004bbafe82',
      aud: 'QxO2kJ4E1ZcVh8',
      sid: 'Hb3lPkU9',
      ...times,
    },
  },
  {
    name: 'Okta, custom authorization server',
    preset: 'okta',
    page: 'https://developer.okta.com/docs/reference/api/oidc/#access-token',
    issuer: 'https://acme.okta.com/oauth2/default',
    audience: 'api://default',
    scope: 'secrets.read',
    client: '0oa1b2c3d4e5f6g7h8i9',
    typ: undefined,
    access: {
      ver: 1,
      jti: 'AT.0mP4JKAZX1iACIT4vbEDF7LpvDVjxypPMf0D7uX39RE',
      iss: 'https://acme.okta.com/oauth2/default',
      aud: 'api://default',
      iat: T - 60,
      exp: T + 3600,
      cid: '0oa1b2c3d4e5f6g7h8i9',
      uid: '00uid4BxXw6I6TV4m0g3',
      scp: ['openid', 'secrets.read'],
      auth_time: T - 120,
      sub: 'dana@acme.com',
    },
    clientClaims: ['cid'],
    scopeClaims: ['scp'],
    otherApi: { aud: 'api://billing' },
    idTyp: undefined,
    idToken: {
      sub: '00uid4BxXw6I6TV4m0g3',
      name: 'Dana',
      ver: 1,
      iss: 'https://acme.okta.com/oauth2/default',
      aud: '0oa1b2c3d4e5f6g7h8i9',
      jti: 'ID.4eAWJOCMB3SX8XewDfVR',
      amr: ['pwd'],
      idp: '00ok1u7AsAkrwdZL3z0g3',
      auth_time: T - 120,
      ...times,
    },
  },
  {
    name: 'Microsoft Entra ID, v2 token (delegated)',
    preset: 'entra',
    page: 'https://learn.microsoft.com/en-us/entra/identity-platform/access-token-claims-reference',
    issuer: `https://login.microsoftonline.com/${TENANT}/v2.0`,
    audience: ENTRA_API,
    scope: 'Secrets.Read',
    client: SPA,
    typ: 'JWT',
    access: {
      aud: ENTRA_API,
      iss: `https://login.microsoftonline.com/${TENANT}/v2.0`,
      iat: T - 60,
      nbf: T - 60,
      exp: T + 3600,
      aio: 'AXQAi/8I',
      azp: SPA,
      azpacr: '0',
      name: 'Dana',
      oid: '690222be-ff1a-4d56-abd1-7e4f7d38e474',
      preferred_username: 'dana@acme.com',
      rh: '0.AAAA',
      scp: 'User.Read Secrets.Read',
      sub: 'HKZpfaHyWadeOouYlitjrI-KffTm222X5rrV3xDqfKQ',
      tid: TENANT,
      uti: 'fqiBqXLPj0eQa82S-IYFAA',
      ver: '2.0',
    },
    clientClaims: ['azp'],
    scopeClaims: ['scp'],
    otherApi: { aud: '00000003-0000-0000-c000-000000000000' },
    idTyp: 'JWT',
    idToken: {
      aud: SPA,
      iss: `https://login.microsoftonline.com/${TENANT}/v2.0`,
      iat: T - 60,
      nbf: T - 60,
      exp: T + 3600,
      name: 'Dana',
      oid: '690222be-ff1a-4d56-abd1-7e4f7d38e474',
      preferred_username: 'dana@acme.com',
      sub: 'HKZpfaHyWadeOouYlitjrI-KffTm222X5rrV3xDqfKQ',
      tid: TENANT,
      uti: 'fqiBqXLPj0eQa82S-IYFAA',
      ver: '2.0',
    },
  },
  {
    name: 'Microsoft Entra ID, v2 app-only token (client credentials, app roles)',
    preset: 'entra',
    page: 'https://learn.microsoft.com/en-us/entra/identity-platform/access-token-claims-reference',
    issuer: `https://login.microsoftonline.com/${TENANT}/v2.0`,
    audience: ENTRA_API,
    scope: 'Secrets.Read',
    client: 'b7c4b5a2-1f8e-4c2e-9f59-0c6d7e8f9a10',
    typ: 'JWT',
    access: {
      aud: ENTRA_API,
      iss: `https://login.microsoftonline.com/${TENANT}/v2.0`,
      iat: T - 60,
      nbf: T - 60,
      exp: T + 3600,
      azp: 'b7c4b5a2-1f8e-4c2e-9f59-0c6d7e8f9a10',
      azpacr: '1',
      oid: 'c1e5f4a3-2b1d-4e6f-8a7b-9c0d1e2f3a4b',
      roles: ['Secrets.Read'],
      sub: 'c1e5f4a3-2b1d-4e6f-8a7b-9c0d1e2f3a4b',
      tid: TENANT,
      uti: 'Zq2fM9W2yEyQ',
      ver: '2.0',
    },
    clientClaims: ['azp'],
    scopeClaims: ['roles'],
    otherApi: { aud: '00000003-0000-0000-c000-000000000000' },
    idTyp: 'JWT',
    idToken: {
      aud: SPA,
      iss: `https://login.microsoftonline.com/${TENANT}/v2.0`,
      ...times,
      roles: ['Secrets.Read'],
      sub: 'x',
      tid: TENANT,
      ver: '2.0',
    },
  },
  {
    name: 'Microsoft Entra ID, v1 token',
    preset: 'entra-v1',
    page: 'https://learn.microsoft.com/en-us/entra/identity-platform/access-token-claims-reference',
    issuer: `https://sts.windows.net/${TENANT}/`,
    audience: 'api://secret-gate',
    scope: 'Secrets.Read',
    client: SPA,
    typ: 'JWT',
    access: {
      aud: 'api://secret-gate',
      iss: `https://sts.windows.net/${TENANT}/`,
      iat: T - 60,
      nbf: T - 60,
      exp: T + 3600,
      acr: '1',
      aio: 'AXQAi/8I',
      amr: ['pwd'],
      appid: SPA,
      appidacr: '0',
      name: 'Dana',
      oid: '690222be-ff1a-4d56-abd1-7e4f7d38e474',
      scp: 'Secrets.Read',
      sub: 'l3_roISQU222bULS9yi2k0XpqpOiMz5H3ZACo1GeXA',
      tid: TENANT,
      unique_name: 'dana@acme.com',
      uti: 'fqiBqXLPj0eQa82S-IYFAA',
      ver: '1.0',
    },
    clientClaims: ['appid'],
    scopeClaims: ['scp'],
    otherApi: { aud: 'https://graph.microsoft.com' },
    idTyp: 'JWT',
    idToken: {
      aud: SPA,
      iss: `https://sts.windows.net/${TENANT}/`,
      ...times,
      amr: ['pwd'],
      name: 'Dana',
      oid: '690222be-ff1a-4d56-abd1-7e4f7d38e474',
      sub: 'x',
      tid: TENANT,
      unique_name: 'dana@acme.com',
      ver: '1.0',
    },
  },
  {
    name: 'Keycloak, with an Audience mapper for the API',
    preset: 'keycloak',
    page: 'https://www.keycloak.org/docs/latest/server_admin/#_audience',
    issuer: 'https://sso.acme.com/realms/acme',
    audience: 'secret-gate-api',
    scope: 'secrets:read',
    client: 'acme-spa',
    typ: 'JWT',
    access: {
      exp: T + 300,
      iat: T - 60,
      jti: 'onrtac:4f2d',
      iss: 'https://sso.acme.com/realms/acme',
      aud: ['secret-gate-api', 'account'],
      sub: 'f:acme:dana',
      typ: 'Bearer',
      azp: 'acme-spa',
      sid: '6b2c9b1d',
      acr: '1',
      'allowed-origins': ['https://app.acme.com'],
      realm_access: { roles: ['default-roles-acme'] },
      scope: 'openid profile secrets:read',
      preferred_username: 'dana',
    },
    clientClaims: ['azp'],
    scopeClaims: ['scope'],
    otherApi: { aud: ['billing-api', 'account'] },
    idTyp: 'JWT',
    idToken: {
      exp: T + 300,
      iat: T - 60,
      iss: 'https://sso.acme.com/realms/acme',
      aud: 'acme-spa',
      sub: 'f:acme:dana',
      typ: 'ID',
      azp: 'acme-spa',
      sid: '6b2c9b1d',
      preferred_username: 'dana',
    },
  },
  {
    name: 'Amazon Cognito user pool',
    preset: 'cognito',
    page: 'https://docs.aws.amazon.com/cognito/latest/developerguide/amazon-cognito-user-pools-using-the-access-token.html',
    issuer: 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf123',
    audience: '1example23456789',
    scope: 'secret-gate/secrets.read',
    client: '1example23456789',
    typ: undefined,
    access: {
      sub: 'aaaaaaaa-bbbb-cccc-dddd-example',
      'cognito:groups': ['admin'],
      iss: 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf123',
      version: 2,
      client_id: '1example23456789',
      origin_jti: 'aaaaaaaa-bbbb',
      event_id: 'cccccccc-dddd',
      token_use: 'access',
      scope: 'openid secret-gate/secrets.read',
      auth_time: T - 120,
      jti: 'eeeeeeee-ffff',
      username: 'dana',
      ...times,
    },
    clientClaims: ['client_id'],
    scopeClaims: ['scope'],
    otherApi: { client_id: '2another9876543' },
    clientIsAudience: true,
    idTyp: undefined,
    idToken: {
      sub: 'aaaaaaaa-bbbb-cccc-dddd-example',
      iss: 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf123',
      'cognito:username': 'dana',
      aud: '1example23456789',
      event_id: 'cccccccc-dddd',
      token_use: 'id',
      auth_time: T - 120,
      email: 'dana@acme.com',
      ...times,
    },
  },
];

/** A JWT as the row's IdP signs it: RS256, its `kid`, its `typ` (or none). */
function sign(claims: Claims, typ: string | undefined): string {
  const payload: Claims = {};
  for (const [name, value] of Object.entries(claims))
    if (value !== undefined) payload[name] = value;
  return signRs256({ alg: 'RS256', kid: KID, ...(typ === undefined ? {} : { typ }) }, payload);
}

const without = (claims: Claims, names: readonly string[]): Claims =>
  Object.fromEntries(Object.entries(claims).filter(([name]) => !names.includes(name)));

let jwks: JwksServer;
const services = new Map<string, TestService>();
const serviceOf = (row: Row) => services.get(row.name)!;

function build(row: Row): TestService {
  return buildService(
    {
      VERIFIER_ISSUER: row.issuer,
      VERIFIER_AUDIENCE: row.audience,
      VERIFIER_PRESET: row.preset,
      VERIFIER_JWKS_URI: jwks.url,
      VERIFIER_REQUIRED_SCOPES: row.scope,
    },
    { now: clock.now },
  );
}

beforeAll(async () => {
  jwks = await startJwksServer(['rsaA']);
  for (const row of rows) {
    const built = build(row);
    await built.service.start();
    services.set(row.name, built);
  }
});
afterAll(async () => {
  for (const { service } of services.values()) await service.stop(0);
  await jwks.close();
});

async function ask(row: Row, token: string): Promise<Decision> {
  // `secret`: the policy NGINX asks for, which the single-issuer variables define.
  return serviceOf(row).service.authorize({
    authorization: `Bearer ${token}`,
    policy: 'secret',
  });
}

const header = (decision: Decision, name: string) =>
  answerOf(decision).headers.find(([key]) => key === name)?.[1];

describe.each(rows)('preset $preset: $name ($page)', (row) => {
  it('accepts its access token, naming the client and the granted scopes', async () => {
    const decision = await ask(row, sign(row.access, row.typ));
    expect(verdictOf(decision)).toEqual({ status: 204, reason: 'allowed' });
    expect(header(decision, 'X-Auth-Client')).toBe(row.client);
    expect(decision.identity?.scopes).toContain(row.scope);
  });

  it('refuses its ID token', async () => {
    const decision = await ask(row, sign(row.idToken, row.idTyp));
    expect(verdictOf(decision).status).toBe(401);
  });

  if (row.discriminator !== false) {
    it('refuses its ID token even when it carries the API as audience', async () => {
      const retargeted = { ...row.idToken, aud: row.audience, client_id: row.audience };
      const decision = await ask(row, sign(retargeted, row.idTyp));
      expect(verdictOf(decision).status).toBe(401);
    });
  }

  it('refuses an access token for another API of the same IdP', async () => {
    const decision = await ask(row, sign({ ...row.access, ...row.otherApi }, row.typ));
    expect(verdictOf(decision)).toEqual({ status: 401, reason: 'audience_mismatch' });
  });

  it('answers 403 insufficient_scope to an access token without the scope', async () => {
    const decision = await ask(row, sign(without(row.access, row.scopeClaims), row.typ));
    expect(verdictOf(decision)).toEqual({ status: 403, reason: 'scope_insufficient' });
    expect(header(decision, 'X-Auth-Challenge')).toContain(`scope="${row.scope}"`);
  });

  if (row.clientIsAudience === true) {
    it('refuses an access token naming no client: its client claim is the audience', async () => {
      const decision = await ask(row, sign(without(row.access, row.clientClaims), row.typ));
      expect(verdictOf(decision)).toEqual({ status: 401, reason: 'audience_mismatch' });
    });
  } else {
    it('answers 403 client_unknown to an access token naming no client, and logs why', async () => {
      const decision = await ask(row, sign(without(row.access, row.clientClaims), row.typ));
      expect(verdictOf(decision)).toEqual({ status: 403, reason: 'client_unknown' });
      expect(header(decision, 'X-Auth-Client')).toBeUndefined();
      expect(header(decision, 'X-Auth-Challenge')).toBeUndefined();
      const logged = serviceOf(row).lines.map(
        (line) => JSON.parse(line) as Record<string, unknown>,
      );
      expect(logged.some((line) => line.reason === 'client_unknown' && line.status === 403)).toBe(
        true,
      );
    });
  }

  it.each([
    [
      'a logout token (`events`)',
      { events: { 'http://schemas.openid.net/event/backchannel-logout': {} } },
    ],
    ['a token with `nonce`', { nonce: 'n-0S6_WzA2Mj' }],
    ['a token with `at_hash`', { at_hash: 'HK6E_P6Dh8Y93mRNtsDB1Q' }],
  ])('refuses %s shaped like its access token', async (_title, extra) => {
    const decision = await ask(row, sign({ ...row.access, ...extra }, row.typ));
    expect(verdictOf(decision)).toEqual({ status: 401, reason: 'claim_invalid' });
  });
});

describe('no preset accepts any IdP\u2019s ID token', () => {
  // Every row's ID token as its vendor documents it (with `nonce` and, where it has one,
  // `at_hash`), re-issued for every other preset's issuer and audience: the worst case, an ID
  // token whose `aud` happens to be the API.
  const pairs = rows.flatMap((target) => rows.map((source) => [target, source] as const));
  it.each(
    pairs.map(([target, source]) => [target.preset, target.name, source.name, target, source]),
  )('%s (%s) refuses the ID token of %s', async (_preset, _target, _source, target, source) => {
    const idToken = {
      ...source.idToken,
      nonce: 'n-0S6_WzA2Mj',
      at_hash: 'HK6E_P6Dh8Y93mRNtsDB1Q',
      iss: target.issuer,
      aud: target.audience,
    };
    const decision = await ask(target, sign(idToken, source.idTyp));
    expect(verdictOf(decision).status).toBe(401);
  });

  it('covers every JWT preset', () => {
    const covered = new Set(rows.map((row) => row.preset));
    expect(PRESET_NAMES.filter((name) => name !== 'google' && !covered.has(name))).toEqual([]);
  });
});

describe('what a preset refuses at start', () => {
  const problemsOf = (env: Record<string, string>): readonly string[] => {
    try {
      loadConfig(env);
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as ConfigError).problems;
    }
    return [];
  };

  it("refuses Okta's org authorization server: its tokens are for Okta's own APIs", () => {
    expect(
      problemsOf({
        VERIFIER_ISSUER: 'https://acme.okta.com',
        VERIFIER_AUDIENCE: 'api://default',
        VERIFIER_PRESET: 'okta',
      }),
    ).toEqual([
      expect.stringMatching(
        /^VERIFIER_ISSUER: the okta preset is for a custom authorization server/,
      ),
    ]);
    expect(
      problemsOf({
        VERIFIER_ISSUER: 'https://acme.okta.com/oauth2/default',
        VERIFIER_AUDIENCE: 'https://acme.okta.com',
        VERIFIER_PRESET: 'okta',
      }),
    ).toEqual([
      expect.stringMatching(
        /^VERIFIER_AUDIENCE: "https:\/\/acme.okta.com" is the org authorization server/,
      ),
    ]);
  });

  it("refuses Keycloak's `account` as the audience: every token of the realm has it", () => {
    expect(
      problemsOf({
        VERIFIER_ISSUER: 'https://sso.acme.com/realms/acme',
        VERIFIER_AUDIENCE: 'account',
        VERIFIER_PRESET: 'keycloak',
      }),
    ).toEqual([
      expect.stringMatching(/^VERIFIER_AUDIENCE: "account" is on every token of a Keycloak realm/),
    ]);
  });

  it('names the presets when an unknown one is asked for', () => {
    expect(
      problemsOf({
        VERIFIER_ISSUER: 'https://a.test',
        VERIFIER_AUDIENCE: 'x',
        VERIFIER_PRESET: 'ping',
      }),
    ).toEqual([expect.stringContaining('expected rfc9068, auth0, auth0-rfc9068, okta, entra')]);
  });

  it('lets every setting a preset fills be given explicitly instead', () => {
    const config = loadConfig({
      VERIFIER_ISSUER: 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf123',
      VERIFIER_AUDIENCE: 'app-client',
      VERIFIER_PRESET: 'cognito',
      VERIFIER_REQUIRE_TYP: 'JWT',
      VERIFIER_CLIENT_CLAIM: 'sub',
      VERIFIER_SCOPE_CLAIMS: 'scp',
      VERIFIER_REQUIRE_CLAIMS: 'token_use=access version=2',
      VERIFIER_MAX_TOKEN_AGE: '2h',
    });
    expect(config.issuers.values().next().value).toMatchObject({
      preset: 'cognito',
      requireTyp: 'JWT',
      clientClaims: ['sub'],
      scopeClaims: ['scp'],
      audienceClaim: 'client_id',
      requireClaims: [
        { claim: 'token_use', value: 'access' },
        { claim: 'version', value: '2' },
      ],
      maxTokenAge: 7200,
    });
  });

  it('takes "preset" on an issuer of the JSON file, google making it a tokeninfo issuer', () => {
    const config = loadConfig({ VERIFIER_CONFIG: '/c.json' }, () =>
      JSON.stringify({
        issuers: [
          { issuer: 'https://sso.acme.com/realms/acme', audience: 'api', preset: 'keycloak' },
          { issuer: 'https://accounts.google.com', audience: 'web-client', preset: 'google' },
        ],
        policies: { secret: { issuers: ['https://sso.acme.com/realms/acme'] } },
      }),
    );
    expect(config.issuers.get('https://sso.acme.com/realms/acme')).toMatchObject({
      type: 'jwt',
      requireTyp: 'JWT',
      requireClaims: [{ claim: 'typ', value: 'Bearer' }],
    });
    expect(config.issuers.get('https://accounts.google.com')).toMatchObject({
      type: 'tokeninfo',
      endpoint: 'https://oauth2.googleapis.com/tokeninfo',
      clientClaims: ['azp', 'aud'],
    });
  });
});

describe('token lifetimes and audiences a preset sets', () => {
  const entra = rows.find((row) => row.preset === 'entra')!;
  const keycloak = rows.find((row) => row.preset === 'keycloak')!;

  it('accepts an Entra token of a session under continuous access evaluation (27 h)', async () => {
    const cae = { ...entra.access, iat: T - 60, exp: T + 27 * 3600 };
    expect(verdictOf(await ask(entra, sign(cae, 'JWT'))).status).toBe(204);
    expect(verdictOf(await ask(entra, sign({ ...cae, exp: T + 29 * 3600 }, 'JWT'))).status).toBe(
      401,
    );
  });

  it('refuses a Keycloak token whose only audience is `account`, saying it needs an Audience mapper', async () => {
    const { service, lines } = serviceOf(keycloak);
    const decision = await service.authorize({
      authorization: `Bearer ${sign({ ...keycloak.access, aud: 'account' }, 'JWT')}`,
      policy: 'secret',
    });
    expect(verdictOf(decision)).toEqual({ status: 401, reason: 'audience_mismatch' });
    expect(lines.at(-1)).toContain('Audience mapper');
  });
});

describe('google: opaque tokens through the tokeninfo endpoint', () => {
  let server: Server;
  let url: string;
  let google: TestService;
  const seen: string[] = [];
  /** What tokeninfo answers per token, shaped as Google's tokeninfo does (exp as a string). */
  const answers = new Map<string, { status: number; body: Claims }>();
  const info = (extra: Claims = {}) => ({
    azp: '1234-web.apps.googleusercontent.com',
    aud: '1234-web.apps.googleusercontent.com',
    sub: '110169484474386276334',
    scope: 'openid https://www.googleapis.com/auth/userinfo.email',
    exp: String(T + 3000),
    expires_in: '3000',
    email: 'dana@gmail.com',
    email_verified: 'true',
    access_type: 'online',
    ...extra,
  });

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        seen.push(`${req.method} ${req.url} ${body}`);
        const token = new URLSearchParams(body).get('access_token') ?? '';
        const answer = answers.get(token) ?? {
          status: 400,
          body: { error: 'invalid_token', error_description: 'Invalid Value' },
        };
        res.writeHead(answer.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(answer.body));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/tokeninfo`;
    google = buildService(
      {
        VERIFIER_ISSUER: 'https://accounts.google.com',
        VERIFIER_AUDIENCE: '1234-web.apps.googleusercontent.com',
        VERIFIER_PRESET: 'google',
        VERIFIER_TOKENINFO_URI: url,
        VERIFIER_REQUIRED_SCOPES: 'https://www.googleapis.com/auth/userinfo.email',
      },
      { now: clock.now },
    );
    await google.service.start();
  });
  afterAll(async () => {
    await google.service.stop(0);
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const askGoogle = (token: string) =>
    google.service.authorize({ authorization: `Bearer ${token}`, policy: 'secret' });

  it('accepts a live token of the configured client, POSTing it (never in a URL)', async () => {
    answers.set('ya29.a0-good', { status: 200, body: info() });
    const decision = await askGoogle('ya29.a0-good');
    expect(verdictOf(decision)).toEqual({ status: 204, reason: 'allowed' });
    expect(header(decision, 'X-Auth-Client')).toBe('1234-web.apps.googleusercontent.com');
    expect(seen.at(-1)).toBe('POST /tokeninfo access_token=ya29.a0-good');
  });

  it('keeps the answer no longer than the token lives', async () => {
    answers.set('ya29.a0-short', { status: 200, body: info({ exp: String(T + 20) }) });
    expect((await askGoogle('ya29.a0-short')).outcome).toBe('allow');
    clock.advance(20);
    try {
      expect((await askGoogle('ya29.a0-short')).outcome).toBe('deny');
    } finally {
      clock.advance(-20);
    }
  });

  it.each([
    ['a token Google does not know (or an ID token)', 'ya29.a0-unknown', undefined, 401],
    [
      'a live token of another app',
      'ya29.a0-other',
      info({ aud: 'evil.apps.googleusercontent.com' }),
      401,
    ],
    ['an expired token', 'ya29.a0-old', info({ exp: String(T - 5) }), 401],
    ['a token without the scope', 'ya29.a0-noscope', info({ scope: 'openid' }), 403],
    [
      'an answer naming no client',
      'ya29.a0-noclient',
      info({ azp: undefined, aud: undefined }),
      401,
    ],
  ])('refuses %s', async (_title, token, body, status) => {
    if (body !== undefined) answers.set(token, { status: 200, body });
    expect(verdictOf(await askGoogle(token)).status).toBe(status);
  });

  it('refuses a Google ID token (a JWT) handed over as an access token', async () => {
    const idToken = sign(
      {
        iss: 'https://accounts.google.com',
        azp: '1234-web.apps.googleusercontent.com',
        aud: '1234-web.apps.googleusercontent.com',
        sub: '110169484474386276334',
        at_hash: 'HK6E_P6Dh8Y93mRNtsDB1Q',
        nonce: 'n-0S6_WzA2Mj',
        ...times,
      },
      'JWT',
    );
    expect(verdictOf(await askGoogle(idToken)).status).toBe(401);
  });
});

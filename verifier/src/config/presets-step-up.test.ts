// Step-up (RFC 9470) per IdP: where each preset reads `acr`, `amr` and `auth_time` in its access
// tokens (the vendor page is cited in presets.ts), tokens shaped as documented through the whole
// verifier, and the start-time refusal where an IdP's access tokens cannot carry a requirement.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './load.js';
import type { PresetName } from './presets.js';
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
const times = { iat: T - 60, exp: T + 3600 };
const TENANT = '72f988bf-86f1-41af-91ab-2d7cd011db47';

interface Row {
  readonly preset: PresetName;
  readonly issuer: string;
  readonly audience: string;
  readonly typ: string | undefined;
  /** An access token of this IdP without step-up claims. */
  readonly access: Record<string, unknown>;
  /** The policy's requirement as VERIFIER_* variables. */
  readonly requirement: Record<string, string>;
  /** The claims of a token that meets it, and of one that does not. */
  readonly met: Record<string, unknown>;
  readonly unmet: Record<string, unknown>;
}

const rows: readonly Row[] = [
  {
    preset: 'rfc9068',
    issuer: 'https://as.example.com',
    audience: 'https://api.example.com',
    typ: 'at+jwt',
    access: { aud: 'https://api.example.com', sub: 'u', client_id: 'spa-1', scope: 's' },
    requirement: {
      VERIFIER_ACR_VALUES: 'urn:mfa',
      VERIFIER_MAX_AGE: '5m',
      VERIFIER_AMR_VALUES: 'mfa',
    },
    met: { acr: 'urn:mfa', amr: ['pwd', 'mfa'], auth_time: T - 60 },
    unmet: { acr: 'urn:pwd', amr: ['pwd'], auth_time: T - 60 },
  },
  {
    // https://developer.okta.com/docs/guides/step-up-authentication/main/
    preset: 'okta',
    issuer: 'https://acme.okta.com/oauth2/default',
    audience: 'api://default',
    typ: undefined,
    access: { ver: 1, aud: 'api://default', cid: '0oa1', scp: ['s'], uid: '00u1', sub: 'u' },
    requirement: { VERIFIER_ACR_VALUES: 'urn:okta:loa:2fa:any', VERIFIER_MAX_AGE: '10m' },
    met: { acr: 'urn:okta:loa:2fa:any', auth_time: T - 300 },
    unmet: { acr: 'urn:okta:loa:1fa:any', auth_time: T - 300 },
  },
  {
    // Entra v2: the authentication contexts met, in `acrs`.
    preset: 'entra',
    issuer: `https://login.microsoftonline.com/${TENANT}/v2.0`,
    audience: 'api-guid',
    typ: 'JWT',
    access: { ver: '2.0', azpacr: '0', aud: 'api-guid', azp: 'spa-guid', scp: 's', sub: 'u' },
    requirement: { VERIFIER_ACR_VALUES: 'c1' },
    met: { acrs: ['c3', 'c1'] },
    unmet: { acrs: ['c3'], acr: 'c1' },
  },
  {
    // Keycloak: `acr` is the ACR mapped to the level reached, `auth_time` from the `basic` scope.
    preset: 'keycloak',
    issuer: 'https://sso.acme.com/realms/acme',
    audience: 'secret-gate-api',
    typ: 'JWT',
    access: { typ: 'Bearer', aud: ['secret-gate-api', 'account'], azp: 'spa', scope: 's' },
    requirement: { VERIFIER_ACR_VALUES: 'gold 2', VERIFIER_MAX_AGE: '300' },
    met: { acr: '2', auth_time: T - 299 },
    unmet: { acr: '1', auth_time: T - 299 },
  },
  {
    // Cognito: `auth_time` only.
    preset: 'cognito',
    issuer: 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf123',
    audience: 'app-client',
    typ: undefined,
    access: { token_use: 'access', client_id: 'app-client', scope: 's', sub: 'u' },
    requirement: { VERIFIER_MAX_AGE: '15m' },
    met: { auth_time: T - 60 },
    unmet: { auth_time: T - 3600 },
  },
];

const sign = (row: Row, claims: Record<string, unknown>) =>
  signRs256(
    {
      alg: 'RS256',
      kid: PRIVATE_JWKS.rsaA.kid,
      ...(row.typ === undefined ? {} : { typ: row.typ }),
    },
    { iss: row.issuer, ...times, ...row.access, ...claims },
  );

let jwks: JwksServer;
const services = new Map<PresetName, TestService>();
beforeAll(async () => {
  jwks = await startJwksServer(['rsaA']);
  for (const row of rows) {
    const built = buildService(
      {
        VERIFIER_ISSUER: row.issuer,
        VERIFIER_AUDIENCE: row.audience,
        VERIFIER_PRESET: row.preset,
        VERIFIER_JWKS_URI: jwks.url,
        ...row.requirement,
      },
      { now: clock.now },
    );
    await built.service.start();
    services.set(row.preset, built);
  }
});
afterAll(async () => {
  for (const { service } of services.values()) await service.stop(0);
  await jwks.close();
});

describe.each(rows)('preset $preset reads step-up claims where its IdP puts them', (row) => {
  const ask = (claims: Record<string, unknown>) =>
    services.get(row.preset)!.service.authorize({
      authorization: `Bearer ${sign(row, claims)}`,
      policy: 'secret',
    });

  it('allows an access token that meets the requirement', async () => {
    expect(verdictOf(await ask(row.met))).toEqual({ status: 204, reason: 'allowed' });
  });

  it('answers 401 insufficient_user_authentication to one that does not', async () => {
    const decision = await ask(row.unmet);
    expect(verdictOf(decision)).toEqual({
      status: 401,
      reason: 'insufficient_user_authentication',
    });
    expect(answerOf(decision).headers[0]?.[1]).toMatch(
      /^Bearer realm="secret-gate", error="insufficient_user_authentication", error_description="/,
    );
  });

  it('answers the same to one without any step-up claim', async () => {
    expect((await ask({})).reason).toBe('insufficient_user_authentication');
  });
});

describe('a requirement an IdP cannot carry in its access tokens stops the start', () => {
  const problemsOf = (env: Record<string, string>): readonly string[] => {
    try {
      loadConfig(env);
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as ConfigError).problems;
    }
    return [];
  };
  const cases: Array<[string, Record<string, string>, RegExp]> = [
    [
      'Auth0: no acr (a reserved claim an Action cannot set)',
      {
        VERIFIER_ISSUER: 'https://acme.eu.auth0.com/',
        VERIFIER_AUDIENCE: 'https://api.acme.com',
        VERIFIER_PRESET: 'auth0',
        VERIFIER_ACR_VALUES: 'http://schemas.openid.net/pape/policies/2007/06/multi-factor',
      },
      /^VERIFIER_ACR_VALUES: issuer "https:\/\/acme.eu.auth0.com\/" \(preset "auth0"\) has "acrClaim" off: its access tokens carry no "acr": Auth0 access tokens carry no/,
    ],
    [
      'Okta: no amr (ID tokens only)',
      {
        VERIFIER_ISSUER: 'https://acme.okta.com/oauth2/default',
        VERIFIER_AUDIENCE: 'api://default',
        VERIFIER_PRESET: 'okta',
        VERIFIER_AMR_VALUES: 'mfa',
      },
      /^VERIFIER_AMR_VALUES: .*"amrClaim" off.*Okta puts "amr" in ID tokens only/,
    ],
    [
      'Entra ID: no auth_time',
      {
        VERIFIER_ISSUER: `https://login.microsoftonline.com/${TENANT}/v2.0`,
        VERIFIER_AUDIENCE: 'api-guid',
        VERIFIER_PRESET: 'entra',
        VERIFIER_MAX_AGE: '5m',
      },
      /^VERIFIER_MAX_AGE: .*"authTimeClaim" off.*Entra ID v2 access tokens carry no "amr" or "auth_time"/,
    ],
    [
      'Cognito: no acr',
      {
        VERIFIER_ISSUER: 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf123',
        VERIFIER_AUDIENCE: 'app-client',
        VERIFIER_PRESET: 'cognito',
        VERIFIER_ACR_VALUES: 'mfa',
      },
      /^VERIFIER_ACR_VALUES: .*Cognito access tokens carry "auth_time" but no "acr" or "amr"/,
    ],
    [
      'Google: nothing at all',
      {
        VERIFIER_ISSUER: 'https://accounts.google.com',
        VERIFIER_AUDIENCE: 'web-client',
        VERIFIER_PRESET: 'google',
        VERIFIER_MAX_AGE: '1h',
      },
      /^VERIFIER_MAX_AGE: .*Google's tokeninfo answer carries no/,
    ],
  ];
  it.each(cases)('%s', (_, env, problem) => {
    expect(problemsOf(env)).toEqual([expect.stringMatching(problem)]);
  });

  it('takes a claim an Auth0 Action adds under a namespaced name instead', () => {
    const config = loadConfig({
      VERIFIER_ISSUER: 'https://acme.eu.auth0.com/',
      VERIFIER_AUDIENCE: 'https://api.acme.com',
      VERIFIER_PRESET: 'auth0',
      VERIFIER_ACR_VALUES: 'mfa',
      VERIFIER_ACR_CLAIM: 'https://secret-gate.example/acr',
    });
    expect(config.issuers.values().next().value).toMatchObject({
      acrClaim: 'https://secret-gate.example/acr',
      amrClaim: undefined,
    });
    expect(config.policies.get('secret')?.acrValues).toEqual(['mfa']);
  });

  it('says so for an issuer whose claim was turned off by hand', () => {
    expect(
      problemsOf({
        VERIFIER_ISSUER: 'https://as.example.com',
        VERIFIER_AUDIENCE: 'api',
        VERIFIER_AUTH_TIME_CLAIM: 'off',
        VERIFIER_MAX_AGE: '60',
      }),
    ).toEqual([
      'VERIFIER_MAX_AGE: issuer "https://as.example.com" (preset "rfc9068") has "authTimeClaim" off: its access tokens carry no "auth_time"',
    ]);
  });

  it('refuses a max age that is not whole seconds', () => {
    expect(
      problemsOf({
        VERIFIER_ISSUER: 'https://as.example.com',
        VERIFIER_AUDIENCE: 'api',
        VERIFIER_MAX_AGE: '1500ms',
      }),
    ).toEqual(['VERIFIER_MAX_AGE: must be a whole number of seconds, at least 1s']);
  });
});

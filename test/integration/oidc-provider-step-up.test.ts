// Step-up (RFC 9470) through real NGINX and the verifier against node-oidc-provider (a certified
// OpenID Provider, test/support/oidc-provider.ts) signing users in at two levels: a password
// sign-in is refused with the challenge, so is a stepped-up one made too long ago, and a fresh
// stepped-up one gets the set. Tokens come from the provider's real code flow, and the last row is
// the SPA in Chromium doing the same with a DPoP-bound token: a password sign-in at the provider's
// login page, the step-up message, a second login (the provider prompts, since the session's acr
// is not the one asked for), the set. The named set `payments` (/secret/payments) beside it asks
// the same of the sign-in, as the dev stack's does.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { chromium } from 'playwright-core';
import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../stack/ports.js';
import { STEP_UP } from '../../stack/service-env.js';
import type { Stack } from '../../stack/start-stack.js';
import { runnerVerifierSettings } from '../../stack/verifier-settings.js';
import { SUITE_OPTIONS, startSuiteStack } from '../support/local-target.js';
import { startOidcProvider, type OidcProviderHarness } from '../support/oidc-provider.js';
import {
  ACR_MFA,
  ACR_PASSWORD,
  signInWithCode,
  type CodeSignIn,
} from '../support/oidc-provider-sign-in.js';

const SPA = 'spa-browser';
const SETS = {
  default: { 'x-api-key': 'op-default-key' },
  clients: { [SPA]: { 'x-api-key': 'op-stepped-up-key' } },
  policies: { payments: { default: { 'payments-publishable-key': 'op-payments-key' } } },
};
const MAX_AGE_SECONDS = STEP_UP.maxAge;

let provider: OidcProviderHarness;
let stack: Stack;
let scratch: string;
let signIn: (extra?: Partial<CodeSignIn>) => Promise<string>;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'sg-op-step-up-'));
  const port = await freePort();
  const redirectUri = `http://127.0.0.1:${port}/`;
  provider = await startOidcProvider({
    clients: ['partner-app'],
    browserClient: { clientId: SPA, redirectUri },
  });
  const secretsFile = join(scratch, 'secrets.json');
  writeFileSync(secretsFile, JSON.stringify(SETS));
  const ownIdp = {
    issuer: provider.issuer,
    audience: provider.resource,
    clientId: SPA,
    preset: 'rfc9068',
  };
  // The policy the VERIFIER_* overlay configures (/secret's here) asks for the second factor within
  // five minutes: the runner's file for them, plus the dev stack's `payments`, no variable's.
  const { document } = runnerVerifierSettings({
    own: ownIdp,
    issuer: provider.issuer,
    audience: provider.resource,
    variables: { VERIFIER_ACR_VALUES: ACR_MFA, VERIFIER_MAX_AGE: `${MAX_AGE_SECONDS}s` },
  });
  const policies = document.policies as Record<string, object>;
  policies.payments = { ...policies.secret, ...STEP_UP };
  const configFile = join(scratch, 'verifier.json');
  writeFileSync(configFile, JSON.stringify(document));
  const verifier = SUITE_OPTIONS.env?.verifier;
  stack = await startSuiteStack({
    ports: { nginx: port },
    secretsFile,
    ownIdp,
    env: { ...SUITE_OPTIONS.env, verifier: { ...verifier, VERIFIER_CONFIG: configFile } },
  });
  const base = { issuer: provider.issuer, clientId: SPA, redirectUri, resource: provider.resource };
  signIn = (extra = {}) => signInWithCode({ ...base, ...extra });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  await provider?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** The gate's answer to a token, its challenge parsed by oauth4webapi as the SPA reads it. */
async function ask(token: string, path = '/secret') {
  try {
    const response = await oauth.protectedResourceRequest(
      token,
      'GET',
      new URL(path, stack.urls.gate),
      new Headers(),
      null,
      { [oauth.allowInsecureRequests]: true },
    );
    return { status: response.status, body: await response.text(), challenge: undefined };
  } catch (error) {
    if (!(error instanceof oauth.WWWAuthenticateChallengeError)) throw error;
    return { status: error.status, body: await error.response.text(), challenge: error.cause[0] };
  }
}

describe('step-up against node-oidc-provider, through NGINX', { timeout: 60_000 }, () => {
  it('refuses a password sign-in with the RFC 9470 challenge naming the level and the age', async () => {
    const token = await signIn();
    expect(decodeJwt(token)).toMatchObject({ acr: ACR_PASSWORD, amr: ['pwd'] });
    const answer = await ask(token);
    expect(answer.status).toBe(401);
    expect(answer.challenge?.scheme).toBe('bearer');
    expect(answer.challenge?.parameters).toMatchObject({
      realm: 'secret-gate',
      error: 'insufficient_user_authentication',
      acr_values: ACR_MFA,
      max_age: String(MAX_AGE_SECONDS),
    });
    expect(answer.body).not.toContain('op-stepped-up-key');
  });

  it('refuses a stepped-up sign-in made an hour ago, naming max_age', async () => {
    provider.backdateSignIns(3600);
    try {
      const token = await signIn({ acrValues: ACR_MFA });
      expect(decodeJwt(token)).toMatchObject({ acr: ACR_MFA, amr: ['pwd', 'otp'] });
      const answer = await ask(token);
      expect(answer.status).toBe(401);
      expect(answer.challenge?.parameters).toMatchObject({
        error: 'insufficient_user_authentication',
        error_description: 'More recent authentication is required',
        max_age: String(MAX_AGE_SECONDS),
      });
      expect(answer.body).not.toContain('op-stepped-up-key');
    } finally {
      provider.backdateSignIns(0);
    }
  });

  it('hands out the set to a fresh stepped-up sign-in (acr_values and max_age honoured)', async () => {
    const token = await signIn({ acrValues: ACR_MFA, maxAge: MAX_AGE_SECONDS });
    const claims = decodeJwt(token);
    expect(claims).toMatchObject({ acr: ACR_MFA, amr: ['pwd', 'otp'] });
    expect(Math.floor(Date.now() / 1000) - Number(claims.auth_time)).toBeLessThan(60);
    const answer = await ask(token);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual(SETS.clients[SPA]);
  });

  it('asks the same of a sign-in for the payments set, and hands it out after the step-up', async () => {
    const refused = await ask(await signIn(), '/secret/payments');
    expect(refused.status).toBe(401);
    expect(refused.challenge?.parameters).toMatchObject({
      error: 'insufficient_user_authentication',
      acr_values: ACR_MFA,
      max_age: String(MAX_AGE_SECONDS),
    });
    expect(refused.body).not.toContain('op-payments-key');
    const token = await signIn({ acrValues: ACR_MFA, maxAge: MAX_AGE_SECONDS });
    const answer = await ask(token, '/secret/payments');
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual(SETS.policies.payments.default);
  });
});

describe('step-up in Chromium against node-oidc-provider', { timeout: 90_000 }, () => {
  it('signs in with a password, shows why, signs in again at the MFA level and shows the set', async () => {
    const context = await chromium.launchPersistentContext(join(scratch, 'chromium'), {
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
    });
    try {
      // The provider's development pages load a web font; nothing here reaches beyond loopback.
      await context.route(/^https?:\/\/(?!127\.0\.0\.1[:/])/, (route) => route.abort());
      const app = await context.newPage();
      const login = async () => {
        await app.getByPlaceholder('Enter any login').fill('dana');
        await app.getByPlaceholder('and password').fill('any-password');
        await app.getByRole('button', { name: 'Sign-in' }).click();
      };
      await app.goto(stack.urls.gate);
      await app.getByRole('button', { name: 'Sign in', exact: true }).click();
      await login();
      await app.getByRole('button', { name: 'Continue' }).click();
      await app.getByRole('heading', { name: 'These secrets need a stronger sign-in' }).waitFor();
      expect(await app.locator('#notice-detail').innerText()).toContain(`"${ACR_MFA}"`);

      const stepUp = app.waitForRequest((r) => r.url().startsWith(`${provider.issuer}/auth?`));
      await app.getByRole('button', { name: 'Continue to sign-in' }).click();
      expect(new URL((await stepUp).url()).searchParams.get('acr_values')).toBe(ACR_MFA);
      await login();
      await app.getByText(/^Fetched at /).waitFor();
      await app.getByRole('button', { name: 'Reveal x-api-key' }).click();
      const shown = app.locator('.secret', { hasText: 'x-api-key' }).locator('.secret-value');
      expect(await shown.innerText()).toBe(SETS.clients[SPA]['x-api-key']);
    } finally {
      await context.close();
    }
  });
});

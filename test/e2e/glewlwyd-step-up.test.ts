// A named step-up set against Glewlwyd (Debian's OpenID provider, test/support/glewlwyd.ts), set up
// as docs/configuration.md says: `npm start -- --issuer <glewlwyd> --config policies.json` with a
// `payments` policy that asks for an `acr`. The set has a policy (the 403
// `insufficient_scope` / `policy_unknown` is gone): a token without the class gets 401 with the
// RFC 9470 challenge, and the SPA in Chromium says why, signs in again with `acr_values`, and
// stops with an error when the IdP's new token still falls short. Glewlwyd 2.7.5 puts no `acr`,
// `amr` or `auth_time` in its access tokens and ignores `acr_values`, so its tokens never meet
// the step-up: the walk ends there, never in a loop and never with the set.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../stack/ports.js';
import type { Stack } from '../../stack/start-stack.js';
import { startGlewlwyd, type GlewlwydHarness } from '../support/glewlwyd.js';
import { startSuiteStack } from '../support/local-target.js';
import { allSecretValues, type SecretsFile } from '../support/secrets.js';

const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'];
const MFA = 'urn:secret-gate:mfa';
const SETS = {
  default: { 'x-api-key': 'glewlwyd-step-up-default' },
  clients: {
    'spa-demo': { 'x-api-key': 'glewlwyd-step-up-spa' },
    'partner-app': { 'x-api-key': 'glewlwyd-step-up-partner' },
  },
  policies: {
    payments: { default: { 'payments-key': 'glewlwyd-step-up-payments' }, clients: {} },
  },
} satisfies SecretsFile;
/**
 * The documented policy file: `/secret` as it is, `payments` after a step-up; both take the
 * DPoP-bound tokens Glewlwyd issues the SPA (`dpop: allowed`, as the run's own policy does).
 */
const POLICIES = {
  policies: {
    secret: { scopes: ['secrets:read'], dpop: 'allowed' },
    payments: { scopes: ['secrets:read'], dpop: 'allowed', acrValues: [MFA] },
  },
};

let idp: GlewlwydHarness;
let stack: Stack;
let scratch: string;
let context: BrowserContext;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'sg-glewlwyd-step-up-'));
  const port = await freePort();
  idp = await startGlewlwyd({ redirectUri: `http://127.0.0.1:${port}/` });
  const secretsFile = join(scratch, 'secrets.json');
  writeFileSync(secretsFile, JSON.stringify(SETS));
  const policyFile = join(scratch, 'policies.json');
  writeFileSync(policyFile, JSON.stringify(POLICIES));
  stack = await startSuiteStack({
    ports: { nginx: port },
    secretsFile,
    policyFile,
    ownIdp: { issuer: idp.issuer, audience: idp.resource, clientId: idp.spaClient },
  });
  context = await chromium.launchPersistentContext(join(scratch, 'chromium'), {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_ARGS,
  });
}, 180_000);

afterAll(async () => {
  await context?.close();
  await stack?.stop();
  await idp?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const claimsOf = (token: string) =>
  JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as Record<
    string,
    unknown
  >;

/** Glewlwyd's own pages: password, consent to the scope, back to the app. */
async function signInAtGlewlwyd(page: Page): Promise<void> {
  await page.getByPlaceholder('Your username').fill(idp.user.username);
  await page.getByPlaceholder('Your password').fill(idp.user.password);
  await page.getByRole('button', { name: 'OK' }).click();
  await page.getByLabel('Secrets').check();
  // Continue only once the consent is stored, or Glewlwyd asks for it again.
  const granted = page.waitForResponse(
    (response) => response.request().method() === 'PUT' && /\/auth\/grant\//.test(response.url()),
  );
  await page.getByRole('button', { name: 'Grant access' }).click();
  expect((await granted).ok()).toBe(true);
  await page.getByRole('button', { name: 'Continue' }).click();
}

describe.sequential('a named step-up set against Glewlwyd', { timeout: 90_000 }, () => {
  it('offers the set and answers a token without the class 401 with the RFC 9470 challenge', async () => {
    const config = (await (await fetch(stack.urls.config)).json()) as { secretSets: string };
    expect(config.secretSets).toBe('payments');
    const token = await idp.clientCredentials();
    const answer = await fetch(`${stack.urls.gate}/secret/payments`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(answer.status).toBe(401);
    expect(answer.headers.get('www-authenticate')).toMatch(
      new RegExp(
        `^Bearer realm="secret-gate", error="insufficient_user_authentication", error_description="A different authentication level is required", acr_values="${MFA}", resource_metadata="`,
      ),
    );
    const body = await answer.text();
    for (const value of allSecretValues(SETS)) expect(body).not.toContain(value);
    // The same token still opens /secret: only the named set asks for more.
    const open = await fetch(stack.urls.secret, { headers: { authorization: `Bearer ${token}` } });
    expect(open.status).toBe(200);
  });

  it('walks the SPA to the challenge, signs in again with acr_values, and stops with an error', async () => {
    const app = await context.newPage();
    const tokens: string[] = [];
    app.on('response', (response) => {
      if (response.url() !== idp.tokenEndpoint) return;
      void response
        .json()
        .then(
          (body: { access_token?: string }) => body.access_token && tokens.push(body.access_token),
        )
        .catch(() => undefined);
    });
    const authorizations: URLSearchParams[] = [];
    app.on('request', (request) => {
      if (request.url().startsWith(`${idp.issuer}/auth?`))
        authorizations.push(new URL(request.url()).searchParams);
    });
    await app.goto(stack.urls.gate);
    await app.getByRole('button', { name: 'Sign in', exact: true }).click();
    await signInAtGlewlwyd(app);
    await app.getByRole('heading', { name: 'Signed in' }).waitFor();
    await app.getByText(/^Fetched at /).waitFor();

    const challenged = app.waitForResponse(`${stack.urls.gate}/secret/payments`);
    await app.getByRole('button', { name: 'payments set', exact: true }).click();
    const answer = await challenged;
    expect(answer.status()).toBe(401);
    expect(await answer.headerValue('www-authenticate')).toContain(
      'error="insufficient_user_authentication"',
    );
    await app.getByRole('heading', { name: 'These secrets need a stronger sign-in' }).waitFor();
    expect(await app.locator('#notice-detail').innerText()).toContain(
      `a sign-in at level "${MFA}"`,
    );

    await app.getByRole('button', { name: 'Continue to sign-in' }).click();
    // Glewlwyd knows the session: it greets the user and asks nothing more than to continue.
    await app.getByText(`Hello ${idp.user.name}`).waitFor();
    await app.getByRole('button', { name: 'Continue' }).click();
    await app
      .getByRole('heading', { name: 'The new sign-in was still not strong enough' })
      .waitFor();
    expect(authorizations.at(-1)?.get('acr_values')).toBe(MFA);
    // Why: Glewlwyd's access tokens carry no authentication class for the gate to read.
    expect(tokens.length).toBeGreaterThanOrEqual(2);
    for (const token of tokens) expect(claimsOf(token)).not.toHaveProperty('acr');
    await app.waitForTimeout(1_000);
    expect(await app.getByRole('button', { name: 'Continue to sign-in' }).isVisible()).toBe(false);
    expect(await app.locator('main').innerText()).not.toContain('glewlwyd-step-up-payments');
    await app.close();
  });
});

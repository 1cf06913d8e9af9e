// A named step-up set against Glewlwyd (Debian's OpenID provider, test/support/glewlwyd.ts), set up
// as docs/configuration.md says: `npm start -- --issuer <glewlwyd> --config policies.json` with a
// `payments` policy that requires the scope `payments`, which Glewlwyd guards with a second
// authentication scheme (retype-password). This is incremental authorization: the SPA signs in with
// its base scopes, asking for the set gets 403 `insufficient_scope` naming the scope (passed on by
// NGINX), the SPA signs in again adding it, Glewlwyd asks for the password again, and the new
// token opens the set. The RFC 9470 row stays as a documented limit: Glewlwyd 2.7.5 puts no `acr`,
// `amr` or `auth_time` in its access tokens and ignores `acr_values`, so a `strong` set asking for
// an `acr` ends in an error after one more sign-in, never in a loop and never with the set.
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
const PAYMENTS = 'payments';
const SETS = {
  default: { 'x-api-key': 'glewlwyd-step-up-default' },
  clients: {
    'spa-demo': { 'x-api-key': 'glewlwyd-step-up-spa' },
    'partner-app': { 'x-api-key': 'glewlwyd-step-up-partner' },
  },
  policies: {
    payments: { default: { 'payments-key': 'glewlwyd-step-up-payments' }, clients: {} },
    strong: { default: { 'strong-key': 'glewlwyd-step-up-strong' }, clients: {} },
  },
} satisfies SecretsFile;
/**
 * The documented policy file: `/secret` as it is, `payments` for a token granted the guarded
 * scope, `strong` for an authentication class Glewlwyd cannot name; all take the DPoP-bound
 * tokens Glewlwyd issues the SPA (`dpop: allowed`, as the run's own policy does).
 */
const POLICIES = {
  policies: {
    secret: { scopes: ['secrets:read'], dpop: 'allowed' },
    payments: { scopes: ['secrets:read', PAYMENTS], dpop: 'allowed' },
    strong: { scopes: ['secrets:read'], dpop: 'allowed', acrValues: [MFA] },
  },
};

let idp: GlewlwydHarness;
let stack: Stack;
let scratch: string;
let context: BrowserContext;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'sg-glewlwyd-step-up-'));
  const port = await freePort();
  idp = await startGlewlwyd({ redirectUri: `http://127.0.0.1:${port}/`, guardedScope: PAYMENTS });
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

/**
 * Glewlwyd's pages on a sign-in that adds the guarded scope: the session is known, so it greets
 * the user; the new scope needs consent (Manage → Grant), then its scheme asks for the password
 * again before Glewlwyd lets the app continue.
 */
async function grantAndRetypePassword(page: Page): Promise<void> {
  await page.getByText(`Hello ${idp.user.name}`).waitFor();
  await page.getByRole('button', { name: 'Manage' }).click();
  await page.getByText('Grant', { exact: true }).click();
  await page.getByLabel('Payments').check();
  const granted = page.waitForResponse(
    (response) => response.request().method() === 'PUT' && /\/auth\/grant\//.test(response.url()),
  );
  await page.getByRole('button', { name: 'Grant access' }).click();
  expect((await granted).ok()).toBe(true);
  await page.getByText('Enter your password').waitFor();
  await page.getByPlaceholder('Value required').fill(idp.user.password);
  const retyped = page.waitForResponse(
    (response) => response.request().method() === 'POST' && /\/api\/auth\/$/.test(response.url()),
  );
  await page.getByRole('button', { name: 'OK' }).click();
  expect((await retyped).ok()).toBe(true);
  await page.getByText('What do you wish for?').waitFor();
  await page.getByRole('button', { name: 'Continue' }).click();
}

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

/** Every access token the page receives from Glewlwyd's token endpoint, in order. */
function collectTokens(page: Page): string[] {
  const tokens: string[] = [];
  page.on('response', (response) => {
    if (response.url() !== idp.tokenEndpoint) return;
    void response
      .json()
      .then(
        (body: { access_token?: string }) => body.access_token && tokens.push(body.access_token),
      )
      .catch(() => undefined);
  });
  return tokens;
}

/** The query of every authorization request the page sends to Glewlwyd, in order. */
function collectAuthorizations(page: Page): URLSearchParams[] {
  const authorizations: URLSearchParams[] = [];
  page.on('request', (request) => {
    if (request.url().startsWith(`${idp.issuer}/auth?`))
      authorizations.push(new URL(request.url()).searchParams);
  });
  return authorizations;
}

describe.sequential('named step-up sets against Glewlwyd', { timeout: 90_000 }, () => {
  it('offers the sets and answers a token without the scope 403 insufficient_scope naming it', async () => {
    const config = (await (await fetch(stack.urls.config)).json()) as { secretSets: string };
    expect(config.secretSets.split(' ').sort()).toEqual([PAYMENTS, 'strong']);
    const token = await idp.clientCredentials();
    expect(claimsOf(token).scope).toBe('secrets:read');
    const answer = await fetch(`${stack.urls.gate}/secret/payments`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(answer.status).toBe(403);
    // NGINX passes the verifier's challenge on the 403 (auth_request copies it only on a 401).
    expect(answer.headers.get('www-authenticate')).toMatch(
      new RegExp(
        `^Bearer realm="secret-gate", error="insufficient_scope", scope="secrets:read ${PAYMENTS}", resource_metadata="`,
      ),
    );
    const body = await answer.text();
    for (const value of allSecretValues(SETS)) expect(body).not.toContain(value);
    // The same token still opens /secret: only the named set asks for more.
    const open = await fetch(stack.urls.secret, { headers: { authorization: `Bearer ${token}` } });
    expect(open.status).toBe(200);
  });

  it('walks the SPA from the insufficient_scope challenge through a second factor to the set', async () => {
    const app = await context.newPage();
    const tokens = collectTokens(app);
    const authorizations = collectAuthorizations(app);
    await app.goto(stack.urls.gate);
    await app.getByRole('button', { name: 'Sign in', exact: true }).click();
    await signInAtGlewlwyd(app);
    await app.getByRole('heading', { name: 'Signed in' }).waitFor();
    await app.getByText(/^Fetched at /).waitFor();
    // The first sign-in asks for the base scopes only.
    expect(authorizations.at(-1)?.get('scope')).toBe('openid secrets:read');

    const challenged = app.waitForResponse(`${stack.urls.gate}/secret/payments`);
    await app.getByRole('button', { name: 'payments set', exact: true }).click();
    const answer = await challenged;
    expect(answer.status()).toBe(403);
    expect(await answer.headerValue('www-authenticate')).toContain(
      `error="insufficient_scope", scope="secrets:read ${PAYMENTS}"`,
    );
    await app.getByRole('heading', { name: 'These secrets need another sign-in' }).waitFor();
    expect(await app.locator('#notice-detail').innerText()).toContain(
      `a sign-in that grants "secrets:read" and "${PAYMENTS}"`,
    );

    await app.getByRole('button', { name: 'Continue to sign-in' }).click();
    await grantAndRetypePassword(app);
    await app.getByText(/^Fetched the payments set at /).waitFor();
    expect(authorizations.at(-1)?.get('scope')).toBe(`openid secrets:read ${PAYMENTS}`);
    expect(await app.locator('main').innerText()).toContain('payments-key');
    await app.getByRole('button', { name: 'Reveal payments-key' }).click();
    expect(await app.locator('main').innerText()).toContain('glewlwyd-step-up-payments');
    // Only the second token carries the guarded scope.
    expect(tokens.map((token) => claimsOf(token).scope)).toEqual([
      'openid secrets:read',
      `openid secrets:read ${PAYMENTS}`,
    ]);
    await app.close();
  });

  it('walks the SPA to an RFC 9470 challenge Glewlwyd cannot meet, and stops with an error', async () => {
    const app = await context.newPage();
    const tokens = collectTokens(app);
    const authorizations = collectAuthorizations(app);
    await app.goto(stack.urls.gate);
    await app.getByRole('button', { name: 'Sign in', exact: true }).click();
    // Glewlwyd keeps the session and the consent of the walk before: it asks only to continue.
    await app.getByText(`Hello ${idp.user.name}`).waitFor();
    await app.getByRole('button', { name: 'Continue' }).click();
    await app.getByText(/^Fetched at /).waitFor();

    const challenged = app.waitForResponse(`${stack.urls.gate}/secret/strong`);
    await app.getByRole('button', { name: 'strong set', exact: true }).click();
    const answer = await challenged;
    expect(answer.status()).toBe(401);
    expect(await answer.headerValue('www-authenticate')).toContain(
      `error="insufficient_user_authentication", error_description="A different authentication level is required", acr_values="${MFA}"`,
    );
    await app.getByRole('heading', { name: 'These secrets need a stronger sign-in' }).waitFor();
    expect(await app.locator('#notice-detail').innerText()).toContain(
      `a sign-in at level "${MFA}"`,
    );

    await app.getByRole('button', { name: 'Continue to sign-in' }).click();
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
    expect(await app.locator('main').innerText()).not.toContain('glewlwyd-step-up-strong');
    await app.close();
  });
});

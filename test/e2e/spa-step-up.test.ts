// Step-up (RFC 9470) in Chromium against the real stack and the dev IdP: the person signs in at the
// password level, the gate's policy asks for the second factor, the SPA says why and, on the
// person's go, signs in again with the challenge's acr_values/max_age, then gets the set. A
// second challenge right after a step-up ends in an error, not in another redirect. Both on a
// stack whose default `/secret` asks for it, and on the dev stack as `npm start` runs it: the
// default set at the password level, the `payments` set (`/secret/payments`) after a step-up.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page, type Request } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../../stack/start-stack.js';

const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'];
const MFA = 'urn:secret-gate:mfa';
const MAX_AGE_SECONDS = 300;

/** The default policy asks for the second factor within five minutes. */
let stack: Stack;
/** The dev stack as it is: only `payments` asks for it (stack/service-env.ts STEP_UP). */
let devStack: Stack;
let context: BrowserContext;
let userDataDir: string;
let apiKey: string;
let paymentsKey: string;
const pages: Page[] = [];

beforeAll(async () => {
  [stack, devStack] = await Promise.all([
    startStack({
      // The policy /secret uses asks for the second factor within five minutes.
      verifierVariables: { VERIFIER_ACR_VALUES: MFA, VERIFIER_MAX_AGE: `${MAX_AGE_SECONDS}s` },
    }),
    startStack(),
  ]);
  const secrets = JSON.parse(readFileSync(stack.files.secrets, 'utf8')) as {
    clients: Record<string, Record<string, string>>;
    policies: Record<string, { default: Record<string, string> }>;
  };
  apiKey = secrets.clients['spa-demo']?.['x-api-key'] ?? '';
  paymentsKey = secrets.policies.payments?.default['payments-publishable-key'] ?? '';
  userDataDir = mkdtempSync(join(tmpdir(), 'secret-gate-step-up-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_ARGS,
  });
}, 180_000);

afterEach(async () => {
  for (const page of pages.splice(0)) await page.close();
});

afterAll(async () => {
  await context?.close();
  await stack?.stop();
  await devStack?.stop();
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
});

async function openApp(on = stack): Promise<Page> {
  const page = await context.newPage();
  pages.push(page);
  await page.goto(on.urls.gate);
  return page;
}

/** The next authorization request the page sends to the dev IdP, as parameters. */
function nextAuthorization(page: Page, on = stack): Promise<URLSearchParams> {
  return page
    .waitForRequest((request: Request) => request.url().startsWith(`${on.urls.idp}/authorize`))
    .then((request) => new URL(request.url()).searchParams);
}

/** Reveals one shown secret and reads its value. */
async function revealed(page: Page, name: string): Promise<string> {
  await page.getByRole('button', { name: `Reveal ${name}` }).click();
  return page.locator('.secret', { hasText: name }).locator('.secret-value').innerText();
}

async function queueClaims(claims: Record<string, unknown>): Promise<void> {
  const response = await fetch(`${stack.urls.idp}/dev/next-token-claims`, {
    method: 'POST',
    body: JSON.stringify({ claims }),
  });
  expect(response.status).toBe(200);
}

describe('step-up in Chromium with the dev IdP', { timeout: 90_000 }, () => {
  it('signs in with a password, says why a second factor is needed, steps up and shows the set', async () => {
    const page = await openApp();
    const first = nextAuthorization(page);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    expect((await first).has('acr_values')).toBe(false);
    await page.getByRole('heading', { name: 'Signed in' }).waitFor();

    await page.getByRole('heading', { name: 'These secrets need a stronger sign-in' }).waitFor();
    const notice = await page.locator('#notice-detail').innerText();
    expect(notice).toContain(`a sign-in at level "${MFA}"`);
    expect(notice).toContain('a sign-in from the last 5 minutes');
    expect(await page.locator('main').innerText()).not.toContain(apiKey);

    const stepUp = nextAuthorization(page);
    await page.getByRole('button', { name: 'Continue to sign-in' }).click();
    const parameters = await stepUp;
    expect(parameters.get('acr_values')).toBe(MFA);
    expect(parameters.get('max_age')).toBe(String(MAX_AGE_SECONDS));
    // The first sign-in was seconds ago, well within max_age: no forced login prompt.
    expect(parameters.has('prompt')).toBe(false);

    await page.getByText(/^Fetched at \d\d:\d\d:\d\d\.$/).waitFor();
    await page.getByRole('button', { name: 'Reveal x-api-key' }).click();
    expect(
      await page.locator('.secret', { hasText: 'x-api-key' }).locator('.secret-value').innerText(),
    ).toBe(apiKey);
  });

  it('shows an error, and sends no third authorization request, when the step-up falls short', async () => {
    const page = await openApp();
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'These secrets need a stronger sign-in' }).waitFor();
    // The IdP "forgets" the second factor: the next token is at the password level again.
    await queueClaims({ acr: 'urn:secret-gate:password', amr: ['pwd'] });
    let authorizations = 0;
    page.on('request', (request) => {
      if (request.url().startsWith(`${stack.urls.idp}/authorize`)) authorizations += 1;
    });
    await page.getByRole('button', { name: 'Continue to sign-in' }).click();
    await page
      .getByRole('heading', { name: 'The new sign-in was still not strong enough' })
      .waitFor();
    await page.waitForTimeout(1_000);
    expect(authorizations).toBe(1);
    expect(await page.getByRole('button', { name: 'Continue to sign-in' }).isVisible()).toBe(false);
    expect(await page.locator('main').innerText()).not.toContain(apiKey);
  });
});

describe('step-up for the payments set of the dev stack in Chromium', { timeout: 90_000 }, () => {
  it('shows the default set at the password level, steps up when the payments set is picked, then shows it', async () => {
    const page = await openApp(devStack);
    const first = nextAuthorization(page, devStack);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    expect((await first).has('acr_values')).toBe(false);
    await page.getByText(/^Fetched at \d\d:\d\d:\d\d\.$/).waitFor();
    expect(await revealed(page, 'x-api-key')).toBe(apiKey);

    const challenged = page.waitForResponse(`${devStack.urls.gate}/secret/payments`);
    await page.getByRole('button', { name: 'payments set', exact: true }).click();
    expect((await challenged).status()).toBe(401);
    await page.getByRole('heading', { name: 'These secrets need a stronger sign-in' }).waitFor();
    const notice = await page.locator('#notice-detail').innerText();
    expect(notice).toContain(`a sign-in at level "${MFA}"`);
    expect(notice).toContain('a sign-in from the last 5 minutes');
    expect(await page.locator('main').innerText()).not.toContain(paymentsKey);

    const stepUp = nextAuthorization(page, devStack);
    await page.getByRole('button', { name: 'Continue to sign-in' }).click();
    const parameters = await stepUp;
    expect(parameters.get('acr_values')).toBe(MFA);
    expect(parameters.get('max_age')).toBe(String(MAX_AGE_SECONDS));
    expect(parameters.has('prompt')).toBe(false);

    await page.getByText(/^Fetched the payments set at \d\d:\d\d:\d\d\.$/).waitFor();
    expect(await revealed(page, 'payments-publishable-key')).toBe(paymentsKey);
    expect(await page.locator('main').innerText()).not.toContain(apiKey);

    await page.getByRole('button', { name: 'Default set', exact: true }).click();
    await page.getByText(/^Fetched at \d\d:\d\d:\d\d\.$/).waitFor();
    expect(await revealed(page, 'x-api-key')).toBe(apiKey);
  });

  it('opens /secret to a password-level token, and /secret/payments only once it is MFA', async () => {
    const at = async (path: string, acr: string) => {
      const claims = { acr, auth_time: Math.floor(Date.now() / 1000) };
      const token = await devStack.mintToken({ claims });
      return fetch(`${devStack.urls.gate}${path}`, {
        headers: { authorization: `Bearer ${token}` },
      });
    };
    const password = 'urn:secret-gate:password';
    const open = await at('/secret', password);
    expect(open.status).toBe(200);
    expect(await open.text()).toContain(apiKey);
    const challenged = await at('/secret/payments', password);
    expect(challenged.status).toBe(401);
    const challenge = challenged.headers.get('www-authenticate') ?? '';
    expect(challenge).toContain('error="insufficient_user_authentication"');
    expect(challenge).toContain(`acr_values="${MFA}"`);
    expect(challenge).toContain(`max_age="${MAX_AGE_SECONDS}"`);
    expect(await challenged.text()).not.toContain(paymentsKey);
    const stepped = await at('/secret/payments', MFA);
    expect(stepped.status).toBe(200);
    expect(await stepped.text()).toContain(paymentsKey);
  });
});

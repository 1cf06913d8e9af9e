// Step-up (RFC 9470) in Chromium against the real stack and the dev IdP: the person signs in at the
// password level, the gate's policy asks for the second factor, the SPA says why and, on the
// person's go, signs in again with the challenge's acr_values/max_age, then gets the set. A
// second challenge right after a step-up ends in an error, not in another redirect.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page, type Request } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../../stack/start-stack.js';

const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'];
const MFA = 'urn:secret-gate:mfa';
const MAX_AGE_SECONDS = 300;

let stack: Stack;
let context: BrowserContext;
let userDataDir: string;
let apiKey: string;
const pages: Page[] = [];

beforeAll(async () => {
  stack = await startStack({
    // The policy /secret uses asks for the second factor within five minutes.
    verifierVariables: { VERIFIER_ACR_VALUES: MFA, VERIFIER_MAX_AGE: `${MAX_AGE_SECONDS}s` },
  });
  const secrets = JSON.parse(readFileSync(stack.files.secrets, 'utf8')) as {
    clients: Record<string, Record<string, string>>;
  };
  apiKey = secrets.clients['spa-demo']?.['x-api-key'] ?? '';
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
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
});

async function openApp(): Promise<Page> {
  const page = await context.newPage();
  pages.push(page);
  await page.goto(stack.urls.gate);
  return page;
}

/** The next authorization request the page sends to the dev IdP, as parameters. */
function nextAuthorization(page: Page): Promise<URLSearchParams> {
  return page
    .waitForRequest((request: Request) => request.url().startsWith(`${stack.urls.idp}/authorize`))
    .then((request) => new URL(request.url()).searchParams);
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

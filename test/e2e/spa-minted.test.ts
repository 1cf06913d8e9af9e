// Minted values in Chromium against the real gate: the stack starts with the dev demo's minted
// values on (as `npm start` does, stack/minted-demo.ts), an Algolia secured key `search-key` and an
// S3 upload URL `avatar-upload-url` beside the static `x-api-key`, with a short lifetime so that
// the SPA's renewal happens within the test. The sign-in, the token, the minting and the delivery
// through NGINX are all the stack's own.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, startStack, type Stack } from '../../stack/start-stack.js';

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const MASK = '••••••••••••';
const RESULTS_DIR = join(REPO_ROOT, 'test-results');
/** Seconds each minted value lives: short, so a renewal happens within the test. */
const TTL_SECONDS = 8;

let stack: Stack;
let context: BrowserContext;
let userDataDir: string;
/** Every /secret answer the page received with minted values, in order. */
const minted: { searchKey: string; uploadUrl: string; expiresAt: Record<string, number> }[] = [];

async function openApp(): Promise<{ page: Page; authorizeRequests: () => number }> {
  const page = await context.newPage();
  let authorize = 0;
  page.on('request', (request) => {
    if (request.isNavigationRequest() && new URL(request.url()).pathname.endsWith('/authorize'))
      authorize++;
  });
  // The gate's own answers, as the page got them through NGINX.
  page.on('response', (response) => {
    if (new URL(response.url()).pathname !== '/secret' || response.status() !== 200) return;
    void response
      .json()
      .then((body: Record<string, unknown>) => {
        if (typeof body['search-key'] !== 'string') return;
        minted.push({
          searchKey: body['search-key'],
          uploadUrl: String(body['avatar-upload-url']),
          expiresAt: body.expires_at as Record<string, number>,
        });
      })
      .catch(() => undefined);
  });
  await page.goto(stack.urls.gate);
  return { page, authorizeRequests: () => authorize };
}

function row(page: Page, name: string) {
  return page.locator('.secret', { hasText: name });
}

beforeAll(async () => {
  stack = await startStack({ mintedDemo: { ttlSeconds: TTL_SECONDS } });
  userDataDir = mkdtempSync(join(tmpdir(), 'secret-gate-chromium-minted-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1100, height: 800 },
  });
}, 180_000);

afterAll(async () => {
  await context?.close();
  await stack?.stop();
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
});

describe('minted values in the SPA (Chromium)', { timeout: 90_000 }, () => {
  it('shows each minted value with its expiry and renews it before it lapses, without a new sign-in', async () => {
    const { page, authorizeRequests } = await openApp();
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'Signed in' }).waitFor();
    await page
      .getByText(/^Fetched at \d\d:\d\d:\d\d\. Minted values renew at \d\d:\d\d:\d\d\.$/)
      .waitFor();
    expect(authorizeRequests()).toBe(1);

    // Minted values carry a countdown; the static key does not.
    const search = row(page, 'search-key');
    const upload = row(page, 'avatar-upload-url');
    const countdown = new RegExp(`^Expires in [1-${TTL_SECONDS}] s \\(at \\d\\d:\\d\\d:\\d\\d\\)$`);
    expect(await search.locator('.secret-expiry').innerText()).toMatch(countdown);
    expect(await upload.locator('.secret-expiry').innerText()).toMatch(countdown);
    expect(await row(page, 'x-api-key').locator('.secret-expiry').count()).toBe(0);
    expect(await row(page, 'x-api-key').locator('.secret-value').innerText()).toBe(MASK);

    // Minted values are masked like keys, a presigned URL included, until the person asks.
    expect(await upload.locator('.secret-value').innerText()).toBe(MASK);
    await page.getByRole('button', { name: 'Reveal search-key' }).click();
    await page.getByRole('button', { name: 'Reveal avatar-upload-url' }).click();
    mkdirSync(RESULTS_DIR, { recursive: true });
    await page.screenshot({ path: join(RESULTS_DIR, 'spa-minted.png'), fullPage: true });
    const first = await search.locator('.secret-value').innerText();
    // An Algolia secured key: base64 of the HMAC and the restrictions, here the user's own records.
    expect(Buffer.from(first, 'base64').toString()).toContain(
      'filters=owner%3Ademo-user&userToken=demo-user',
    );
    const firstUpload = await upload.locator('.secret-value').innerText();
    const uploadUrl = new URL(firstUpload);
    expect(uploadUrl.pathname).toBe('/dev-uploads/uploads/demo-user/avatar.png');
    expect(uploadUrl.searchParams.get('X-Amz-Expires')).toBe(String(TTL_SECONDS));
    expect(uploadUrl.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
    const firstExpiry = minted.at(-1)?.expiresAt['avatar-upload-url'] ?? 0;
    const firstCount = minted.length;
    expect(firstCount).toBeGreaterThan(0);

    // Past the first values' lifetime: renewed ones are on screen, still revealed where the person
    // revealed them, with a later expiry, from the same sign-in.
    await page.waitForTimeout((TTL_SECONDS + 1) * 1000);
    expect(minted.length).toBeGreaterThan(firstCount);
    const latest = minted.at(-1);
    expect(latest?.expiresAt['avatar-upload-url']).toBeGreaterThan(firstExpiry);
    const renewed = await search.locator('.secret-value').innerText();
    expect(renewed).not.toBe(first);
    expect(Buffer.from(renewed, 'base64').toString()).toContain(
      'filters=owner%3Ademo-user&userToken=demo-user',
    );
    expect(await upload.locator('.secret-value').innerText()).not.toBe(firstUpload);
    expect(await upload.locator('.secret-expiry').innerText()).toMatch(countdown);
    expect(authorizeRequests()).toBe(1);
    expect(await page.getByRole('heading', { name: 'Signed in' }).isVisible()).toBe(true);

    // Signing out ends the renewals: nothing is fetched for the gone session.
    const beforeSignOut = minted.length;
    // Sign-out also ends the dev IdP's session, which redirects back to a fresh page load.
    const backFromIdp = page.waitForEvent('load');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await backFromIdp;
    await page.getByRole('heading', { name: 'You are signed out' }).waitFor();
    await page.waitForTimeout(5_000);
    expect(minted.length).toBe(beforeSignOut);
    expect(await page.locator('main').innerText()).not.toContain('dev-uploads');
    await page.close();
  });
});

// Minted values in Chromium: the SPA shows each per-user value with its expiry and renews it
// before it lapses, without a new sign-in. The sign-in, the token and the static values are the
// real stack's; the minted values come from a small node server in front of the real gate that
// answers the /secret contract (static values + minted ones + `expires_at`), as the gate will.
// It forwards each request's Authorization and DPoP headers to the gate first, so a token the
// gate refuses gets the gate's own refusal and nothing is minted for it.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
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
const LIFETIMES = { 'algolia-key': 12, 'upload-url': 8 };

let stack: Stack;
let context: BrowserContext;
let userDataDir: string;
let contract: Server;
let contractUrl: string;
/** Every request the contract server answered with minted values, in order. */
const minted: { sub: string; serial: number }[] = [];

/** The `sub` of a JWT access token (already checked by the gate before this is read). */
function subjectOf(authorization: string): string {
  const payload = authorization.split(' ')[1]?.split('.')[1] ?? '';
  return (JSON.parse(Buffer.from(payload, 'base64url').toString()) as { sub: string }).sub;
}

/** The contract server: the gate's own answer, plus values minted for the caller. */
function startContractServer(): Promise<void> {
  contract = createServer((req, res) => {
    void (async () => {
      const headers: Record<string, string> = {};
      for (const name of ['authorization', 'dpop']) {
        const value = req.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }
      const gate = await fetch(stack.urls.secret, { headers });
      if (!gate.ok) {
        // The gate's refusal as it is: status and challenge, no minted value.
        const challenge = gate.headers.get('WWW-Authenticate');
        res.writeHead(gate.status, {
          'Content-Type': 'application/json',
          ...(challenge ? { 'WWW-Authenticate': challenge } : {}),
        });
        res.end(await gate.text());
        return;
      }
      const values = (await gate.json()) as Record<string, string>;
      const now = Math.floor(Date.now() / 1000);
      const sub = subjectOf(headers.authorization ?? '');
      const serial = minted.length + 1;
      minted.push({ sub, serial });
      res.writeHead(200, {
        'Content-Type': 'application/json',
        'Cache-Control': 'no-store',
        Date: new Date(now * 1000).toUTCString(),
      });
      res.end(
        JSON.stringify({
          ...values,
          'algolia-key': `alg-${sub}-${serial}`,
          'upload-url': `https://uploads.example.com/uploads/${sub}/avatar.png?X-Amz-Signature=${serial}`,
          expires_at: {
            'algolia-key': now + LIFETIMES['algolia-key'],
            'upload-url': now + LIFETIMES['upload-url'],
          },
        }),
      );
    })().catch(() => {
      res.writeHead(502, { 'Content-Type': 'application/json' });
      res.end('{"error":"bad_gateway"}');
    });
  });
  return new Promise((resolve) => {
    contract.listen(0, '127.0.0.1', () => {
      contractUrl = `http://127.0.0.1:${(contract.address() as AddressInfo).port}/secret`;
      resolve();
    });
  });
}

async function openApp(): Promise<{ page: Page; authorizeRequests: () => number }> {
  const page = await context.newPage();
  let authorize = 0;
  page.on('request', (request) => {
    if (request.isNavigationRequest() && new URL(request.url()).pathname.endsWith('/authorize'))
      authorize++;
  });
  // The page's /secret goes to the contract server, with the headers the page sent.
  await page.route('**/secret', async (route) => {
    const headers = await route.request().allHeaders();
    const response = await route.fetch({ url: contractUrl, headers });
    await route.fulfill({ response });
  });
  await page.goto(stack.urls.gate);
  return { page, authorizeRequests: () => authorize };
}

function row(page: Page, name: string) {
  return page.locator('.secret', { hasText: name });
}

beforeAll(async () => {
  stack = await startStack();
  await startContractServer();
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
  await new Promise((resolve) => contract?.close(resolve));
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
    const algolia = row(page, 'algolia-key');
    const upload = row(page, 'upload-url');
    expect(await algolia.locator('.secret-expiry').innerText()).toMatch(
      /^Expires in \d+ s \(at \d\d:\d\d:\d\d\)$/,
    );
    expect(await upload.locator('.secret-expiry').innerText()).toMatch(/^Expires in [1-8] s /);
    expect(await row(page, 'x-api-key').locator('.secret-expiry').count()).toBe(0);
    expect(await row(page, 'x-api-key').locator('.secret-value').innerText()).toBe(MASK);

    await page.getByRole('button', { name: 'Reveal algolia-key' }).click();
    mkdirSync(RESULTS_DIR, { recursive: true });
    await page.screenshot({ path: join(RESULTS_DIR, 'spa-minted.png'), fullPage: true });
    const first = await algolia.locator('.secret-value').innerText();
    expect(first).toMatch(/^alg-demo-user-\d+$/);
    const firstUpload = await upload.locator('.secret-value').innerText();
    const firstExpiry = await upload.locator('.secret-expiry').innerText();
    const firstCount = minted.length;

    // Past the first upload URL's lifetime: a renewed one is on screen, still revealed where the
    // person revealed it, with a later expiry, from the same sign-in.
    await page.waitForTimeout((LIFETIMES['upload-url'] + 1) * 1000);
    expect(minted.length).toBeGreaterThan(firstCount);
    const renewed = await algolia.locator('.secret-value').innerText();
    expect(renewed).toMatch(/^alg-demo-user-\d+$/);
    expect(renewed).not.toBe(first);
    expect(await upload.locator('.secret-value').innerText()).not.toBe(firstUpload);
    expect(await upload.locator('.secret-expiry').innerText()).toMatch(/^Expires in [1-8] s /);
    expect(await upload.locator('.secret-expiry').innerText()).not.toBe(firstExpiry);
    expect(authorizeRequests()).toBe(1);
    expect(await page.getByRole('heading', { name: 'Signed in' }).isVisible()).toBe(true);
    expect(new Set(minted.map((m) => m.sub))).toEqual(new Set(['demo-user']));

    // Signing out ends the renewals: nothing is fetched for the gone session.
    const beforeSignOut = minted.length;
    // Sign-out also ends the dev IdP's session, which redirects back to a fresh page load.
    const backFromIdp = page.waitForEvent('load');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await backFromIdp;
    await page.getByRole('heading', { name: 'You are signed out' }).waitFor();
    await page.waitForTimeout(5_000);
    expect(minted.length).toBe(beforeSignOut);
    expect(await page.locator('main').innerText()).not.toContain('alg-demo-user');
    await page.close();
  });
});

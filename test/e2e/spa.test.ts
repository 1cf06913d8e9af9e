// The SPA in Chromium against the real stack (dev IdP, verifier, NGINX) started by the same code
// as `npm start`. Assertions are on what a person sees; the only interference is the network
// route that corrupts a token in flight, which is what an expired or forged token looks like.
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
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

let stack: Stack;
let context: BrowserContext;
let userDataDir: string;
let apiKey: string;
const pages: Page[] = [];
const cspViolations: string[] = [];

/** The API key NGINX hands to spa-demo, read from the secrets file the stack serves. */
function spaApiKey(secretsFile: string): string {
  const secrets = JSON.parse(readFileSync(secretsFile, 'utf8')) as {
    default?: Record<string, string>;
    clients?: Record<string, Record<string, string>>;
  };
  const key = secrets.clients?.['spa-demo']?.['x-api-key'] ?? secrets.default?.['x-api-key'];
  if (!key) throw new Error('the stack secrets file has no x-api-key for spa-demo');
  return key;
}

async function openApp(options: { fakeClock?: boolean; gate?: string } = {}): Promise<Page> {
  const page = await context.newPage();
  pages.push(page);
  // Playwright's clock lets a test jump the page's time forward instead of waiting for it.
  if (options.fakeClock) await page.clock.install();
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy/i.test(message.text())) {
      cspViolations.push(message.text());
    }
  });
  await page.goto(options.gate ?? stack.urls.gate);
  return page;
}

/** Signs in through the dev IdP (it redirects straight back) and waits for the secrets. */
async function signIn(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { name: 'Signed in' }).waitFor();
  await page.getByText(/^Fetched at \d\d:\d\d:\d\d\.$/).waitFor();
}

/** Serves the real /config.json with a CloudFront image added, as an operator would configure it. */
async function withCloudFrontImage(page: Page, imageUrl: string): Promise<void> {
  await page.route('**/config.json', async (route) => {
    const response = await route.fetch();
    const config = (await response.json()) as Record<string, unknown>;
    await route.fulfill({ response, json: { ...config, cloudfront: { imageUrl } } });
  });
}

function secretValue(page: Page) {
  return page.locator('.secret', { hasText: 'x-api-key' }).locator('.secret-value');
}

beforeAll(async () => {
  stack = await startStack();
  apiKey = spaApiKey(stack.files.secrets);
  userDataDir = mkdtempSync(join(tmpdir(), 'secret-gate-chromium-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1100, height: 800 },
    // The Copy button writes to the clipboard; reading it back proves what was copied.
    permissions: ['clipboard-read', 'clipboard-write'],
  });
}, 180_000);

afterEach(async () => {
  for (const page of pages.splice(0)) await page.close();
  if (!stack.isRunning('verifier')) await stack.startService('verifier');
});

afterAll(async () => {
  await context?.close();
  await stack?.stop();
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
});

describe('the SPA in Chromium against the running gate', { timeout: 90_000 }, () => {
  it('shows the signed-out view on a first visit', async () => {
    const page = await openApp();
    await page.getByRole('heading', { name: 'You are signed out' }).waitFor();
    expect(await page.getByRole('button', { name: 'Sign in', exact: true }).isVisible()).toBe(true);
    expect(await page.getByRole('heading', { name: 'Your secrets' }).isVisible()).toBe(false);
    expect(await page.getByRole('button', { name: 'Sign out' }).isVisible()).toBe(false);
  });

  it('signs in through the dev IdP and lands back signed in, with the code gone from the address bar', async () => {
    const page = await openApp();
    await signIn(page);
    const url = new URL(page.url());
    expect(url.origin + url.pathname).toBe(`${stack.urls.gate}/`);
    expect(url.search).toBe('');
    expect(await page.locator('#user-sub').innerText()).toBe('demo-user');
    expect(await page.getByText('Signed in as Dana Demo').isVisible()).toBe(true);
    expect(await page.locator('#user-name').innerText()).toBe('Dana Demo');
    expect(await page.locator('#token-expiry').innerText()).toMatch(
      /^in \d+ (min|h) .*\(at \d\d:\d\d:\d\d\)$/,
    );
  });

  it('shows the API key masked, reveals it on request and hides it again', async () => {
    const page = await openApp();
    await signIn(page);
    expect(await secretValue(page).innerText()).toBe(MASK);
    expect(await page.locator('main').innerText()).not.toContain(apiKey);

    mkdirSync(RESULTS_DIR, { recursive: true });
    await page.screenshot({ path: join(RESULTS_DIR, 'spa-signed-in.png'), fullPage: true });

    await page.getByRole('button', { name: 'Reveal x-api-key' }).click();
    expect(await secretValue(page).innerText()).toBe(apiKey);
    expect(
      await page.getByRole('button', { name: 'Hide x-api-key' }).getAttribute('aria-pressed'),
    ).toBe('true');
    await page.getByRole('button', { name: 'Hide x-api-key' }).click();
    expect(await secretValue(page).innerText()).toBe(MASK);
  });

  it('copies the real API key, not the mask, to the clipboard', async () => {
    const page = await openApp();
    await signIn(page);
    await page.getByRole('button', { name: 'Copy x-api-key' }).click();
    await page.getByText('Copied x-api-key to the clipboard.').waitFor();
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(apiKey);
    expect(await secretValue(page).innerText()).toBe(MASK);
  });

  it('names the missing scope when the IdP issued a token without secrets:read', async () => {
    const page = await openApp();
    // The dev IdP's control API shapes the next token it issues, as a real IdP would for a user
    // who was not granted the scope; the verifier and NGINX answer 403 on their own.
    await stack.idp.queueClaims({ scope: 'openid' });
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'You are not allowed to read the secrets' }).waitFor();
    expect(await page.getByText(/lacks the permission "secrets:read"/).isVisible()).toBe(true);
    expect(await page.locator('.secret').count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Sign out' }).isVisible()).toBe(true);
  });

  it('keeps tokens out of every browser storage, so a reload signs the person out', async () => {
    const page = await openApp();
    await signIn(page);
    // Evaluated in the page; written as a string because this file is type-checked without DOM types.
    const stored = await page.evaluate<{ local: number; session: number; cookies: string }>(
      '({ local: localStorage.length, session: sessionStorage.length, cookies: document.cookie })',
    );
    expect(stored).toEqual({ local: 0, session: 0, cookies: '' });
    await page.reload();
    await page.getByRole('heading', { name: 'You are signed out' }).waitFor();
  });

  it('says the session expired once the token lifetime has passed, without waiting for a 401', async () => {
    const page = await openApp({ fakeClock: true });
    await signIn(page);
    await page.clock.fastForward('01:00:05');
    await page.getByRole('heading', { name: 'Your session has expired' }).waitFor();
    expect(await page.getByRole('button', { name: 'Sign in again' }).isVisible()).toBe(true);
    expect(await page.locator('.secret').count()).toBe(0);
  });

  it('says the session expired and asks to sign in again when the gate rejects a tampered token', async () => {
    const page = await openApp();
    await signIn(page);
    const statuses: number[] = [];
    await page.route('**/secret', async (route) => {
      const headers = route.request().headers();
      const [header, payload, signature = ''] = (headers.authorization ?? '').split('.');
      // Flip one character in the middle of the signature: the token still parses, but no
      // longer verifies, exactly like a forged or corrupted token would.
      const at = Math.floor(signature.length / 2);
      const flipped = signature[at] === 'A' ? 'B' : 'A';
      headers.authorization = `${header}.${payload}.${signature.slice(0, at)}${flipped}${signature.slice(at + 1)}`;
      const response = await route.fetch({ headers });
      statuses.push(response.status());
      await route.fulfill({ response });
    });
    await page.getByRole('button', { name: 'Fetch secrets again' }).click();

    await page.getByRole('heading', { name: 'Your session has expired' }).waitFor();
    expect(await page.getByText('Sign in again to continue.').isVisible()).toBe(true);
    expect(await page.getByRole('button', { name: 'Sign in again' }).isVisible()).toBe(true);
    expect(statuses).toEqual([401]);
    expect(await page.locator('main').innerText()).not.toContain(MASK);
    expect(await page.getByRole('button', { name: 'Sign out' }).isVisible()).toBe(false);

    await page.unroute('**/secret');
    await page.getByRole('button', { name: 'Sign in again' }).click();
    await page.getByText(/^Fetched at /).waitFor();
    expect(await page.getByRole('heading', { name: 'Your session has expired' }).isVisible()).toBe(
      false,
    );
  });

  it('says the service is unavailable while the verifier is stopped, and recovers on retry', async () => {
    const page = await openApp();
    await signIn(page);
    await stack.stopService('verifier');
    await page.getByRole('button', { name: 'Fetch secrets again' }).click();

    await page.getByRole('heading', { name: 'The secret service is unavailable' }).waitFor();
    expect(await page.getByText(/The gate cannot check sign-ins right now\./).isVisible()).toBe(
      true,
    );
    expect(await page.getByText(/^Still showing the secrets fetched at /).isVisible()).toBe(true);

    await stack.startService('verifier');
    await page.getByRole('button', { name: 'Try again' }).click();
    await page.getByText(/^Fetched at /).waitFor();
    expect(
      await page.getByRole('heading', { name: 'The secret service is unavailable' }).isVisible(),
    ).toBe(false);
  });

  it('says the sign-in service cannot be reached while the IdP is down, and signs in once it is back', async () => {
    const page = await openApp();
    await stack.idp.setOutage('error');
    try {
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByRole('heading', { name: 'Sign-in did not complete' }).waitFor();
      expect(
        await page
          .getByText('The sign-in service could not be reached. Try again in a moment.')
          .isVisible(),
      ).toBe(true);
    } finally {
      await stack.idp.setOutage('up');
    }
    await signIn(page);
    expect(await page.getByRole('heading', { name: 'Sign-in did not complete' }).isVisible()).toBe(
      false,
    );
  });

  it('clears the secrets and the session on sign-out', async () => {
    const page = await openApp();
    await signIn(page);
    await page.getByRole('button', { name: 'Reveal x-api-key' }).click();
    const sentBefore = (await stack.idp.stats()).logoutTokensSent;
    // Sign-out also ends the dev IdP's session, which redirects back to a fresh page load.
    const backFromIdp = page.waitForEvent('load');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await backFromIdp;

    await page.getByRole('heading', { name: 'You are signed out' }).waitFor();
    const text = await page.locator('body').innerText();
    expect(text).not.toContain(apiKey);
    expect(text).not.toContain('demo-user');
    expect(await page.getByRole('heading', { name: 'Your secrets' }).isVisible()).toBe(false);
    // The SPA's sign-out went through the IdP, which sent the gate a back-channel logout token.
    expect((await stack.idp.stats()).logoutTokensSent).toBe(sentBefore + 1);
    // The IdP told the gate (back-channel logout): a token of the logout's own second counts as
    // older, so the next test's sign-in waits that second out.
    await page.waitForTimeout(1_100);
  });

  it('hides the CloudFront panel when the configuration names no CloudFront image', async () => {
    const page = await openApp();
    await signIn(page);
    expect(
      await page.getByRole('heading', { name: 'Private image (CloudFront)' }).isVisible(),
    ).toBe(false);
  });

  it('shows the private image after the secrets arrive when CloudFront is configured', async () => {
    const page = await openApp();
    // The operator's switch: /config.json as NGINX renders it, plus a CloudFront image path
    // (the favicon stands in for an object behind the signed cookies).
    await withCloudFrontImage(page, '/favicon.svg');
    await page.reload();
    await signIn(page);
    await page.getByText('Loaded with your signed CloudFront cookies.').waitFor();
    expect(
      await page.getByRole('img', { name: 'Private image served through CloudFront' }).isVisible(),
    ).toBe(true);
  });

  it('explains a private image that cannot be loaded', async () => {
    const page = await openApp();
    await withCloudFrontImage(page, '/private/not-there.png');
    await page.reload();
    await signIn(page);
    await page.getByText(/^The private image could not be loaded/).waitFor();
    expect(
      await page.getByRole('img', { name: 'Private image served through CloudFront' }).isVisible(),
    ).toBe(false);
  });

  it('moves keyboard focus through the signed-in view in reading order', async () => {
    const page = await openApp();
    await signIn(page);
    // Sign-in leaves focus on the "Signed in" heading, so Tab continues from there.
    const names: string[] = [];
    for (let i = 0; i < 6; i += 1) {
      await page.keyboard.press('Tab');
      names.push(
        await page.evaluate<string>(
          "document.activeElement?.getAttribute('aria-label') ?? document.activeElement?.textContent?.trim() ?? ''",
        ),
      );
    }
    expect(names).toEqual([
      'Fetch secrets again',
      // The dev stack offers its step-up set beside the default one (SG_SPA_SECRET_SETS).
      'Default set',
      'payments set',
      'Reveal x-api-key',
      'Copy x-api-key',
      'Copy api-base',
    ]);
  });

  it('fits a narrow phone screen without sideways scrolling', async () => {
    const page = await openApp();
    await page.setViewportSize({ width: 360, height: 740 });
    await signIn(page);
    await page.screenshot({ path: join(RESULTS_DIR, 'spa-signed-in-narrow.png'), fullPage: true });
    const overflow = await page.evaluate<number>(
      'document.documentElement.scrollWidth - document.documentElement.clientWidth',
    );
    expect(overflow).toBe(0);
  });

  it('ran without Content Security Policy violations', () => {
    expect(cspViolations).toEqual([]);
  });
});

describe('the SPA when the gate limits how often secrets are fetched', { timeout: 90_000 }, () => {
  let limited: Stack;

  beforeAll(async () => {
    // One /secret per minute plus a burst of one (NGINX refuses burst=0): the fetch right after
    // sign-in and one more pass, the third within the minute is refused with 429.
    limited = await startStack({
      env: { nginx: { SG_SECRET_RATE: '1r/m', SG_SECRET_BURST: '1' } },
    });
  }, 180_000);

  afterAll(async () => {
    await limited?.stop();
  });

  it('asks the person to slow down when the gate answers 429', async () => {
    const page = await openApp({ gate: limited.urls.gate });
    await signIn(page);
    const statuses: number[] = [];
    for (let i = 0; i < 2; i += 1) {
      const answered = page.waitForResponse((response) => response.url().endsWith('/secret'));
      await page.getByRole('button', { name: 'Fetch secrets again' }).click();
      statuses.push((await answered).status());
    }
    expect(statuses).toEqual([200, 429]);
    await page.getByRole('heading', { name: 'Too many requests — slow down' }).waitFor();
    expect(
      await page
        .getByText(/^The gate is limiting how often secrets can be fetched\. Try again/)
        .isVisible(),
    ).toBe(true);
    // What was fetched before stays on screen; nothing is lost by asking too often.
    expect(await page.getByText(/^Still showing the secrets fetched at /).isVisible()).toBe(true);
    expect(await secretValue(page).innerText()).toBe(MASK);
  });
});

describe('DPoP in Chromium (RFC 9449)', { timeout: 90_000 }, () => {
  it('signs in with a DPoP-bound token and shows the secrets; the token alone is refused outside the browser', async () => {
    const page = await openApp();
    const captured: Array<Promise<{ url: string; authorization?: string; dpop?: string }>> = [];
    page.on('request', (request) => {
      if (!/\/(token|secret)$/.test(request.url()) || request.method() === 'OPTIONS') return;
      // allHeaders(): headers() leaves out some the browser adds, and DPoP must be seen as sent.
      captured.push(
        request.allHeaders().then((headers) => ({
          url: request.url(),
          authorization: headers.authorization,
          dpop: headers.dpop,
        })),
      );
    });
    await signIn(page);
    await page.getByRole('button', { name: 'Reveal x-api-key' }).click();
    expect(await secretValue(page).innerText()).toBe(apiKey);
    const seen = await Promise.all(captured);

    // The token request and the /secret call each carried a proof, and /secret used the DPoP scheme.
    expect(seen.find((r) => r.url === stack.urls.tokenEndpoint)?.dpop).toBeTruthy();
    const secretCall = seen.find((r) => r.url === stack.urls.secret);
    expect(secretCall?.authorization).toMatch(/^DPoP [\w-]+\.[\w-]+\.[\w-]+$/);
    expect(secretCall?.dpop).toBeTruthy();
    const token = (secretCall?.authorization ?? '').slice('DPoP '.length);
    const claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as {
      cnf?: { jkt?: string };
    };
    expect(claims.cnf?.jkt).toMatch(/^[\w-]{43}$/);

    // The key never left the page: nothing in web storage holds the token or a private key.
    const stored = await page.evaluate<string>(
      'JSON.stringify({ ...window.localStorage, ...window.sessionStorage })',
    );
    expect(stored).not.toContain(token);
    expect(stored).not.toMatch(/"d"\s*:/);

    // The same token from outside the browser, where the key is not: 401 each way, no secret.
    const replays: Array<Record<string, string>> = [
      { Authorization: `Bearer ${token}` },
      { Authorization: `DPoP ${token}` },
      { Authorization: `DPoP ${token}`, DPoP: secretCall?.dpop ?? '' },
    ];
    for (const headers of replays) {
      const response = await fetch(stack.urls.secret, { headers });
      const body = await response.text();
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toMatch(/^DPoP error=/);
      expect(body).not.toContain(apiKey);
    }

    // The page itself keeps working: its next call signs a new proof.
    const again = page.waitForResponse((response) => response.url() === stack.urls.secret);
    await page.getByRole('button', { name: 'Fetch secrets again' }).click();
    expect((await again).status()).toBe(200);
  });

  it('refuses the SPA within the revocation bound once the person is signed out elsewhere', async () => {
    const page = await openApp();
    await signIn(page);
    const sub = await page.locator('#user-sub').innerText();
    // The dev IdP ends the session elsewhere and tells the gate over back-channel logout.
    const signedOut = Date.now();
    const { delivered } = await stack.idp.signOut(sub);
    expect(delivered.map((delivery) => delivery.status)).toEqual([200]);

    let refusedAfter: number | undefined;
    while (refusedAfter === undefined && Date.now() - signedOut < 8_000) {
      const answer = page.waitForResponse((response) => response.url() === stack.urls.secret);
      await page.getByRole('button', { name: 'Fetch secrets again' }).click();
      if ((await answer).status() === 401) refusedAfter = Date.now() - signedOut;
      else await page.waitForTimeout(200);
    }
    expect(refusedAfter).toBeDefined();
    expect(refusedAfter!).toBeLessThanOrEqual(6_000);
    await page.getByRole('heading', { name: 'Your session has expired' }).waitFor();
    expect(await page.locator('main').innerText()).not.toContain(apiKey);

    // A token of the logout's own second counts as older; signing in again afterwards works.
    await page.waitForTimeout(1_100);
    await page.getByRole('button', { name: 'Sign in again' }).click();
    await page.getByText(/^Fetched at /).waitFor();
  });
});

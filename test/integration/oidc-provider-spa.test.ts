// The own-IdP mode against node-oidc-provider (a certified OpenID Provider, test/support/
// oidc-provider.ts) through the SPA in Chromium: sign-in with code + PKCE at the provider's own
// development login and consent pages, the RFC 8707 `resource` making `aud` the API, a DPoP-bound
// token, `/secret` with the SPA client's own set; then sign-out at the provider (RP-initiated
// logout), whose back-channel logout token makes the gate refuse the same token within 6 s.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../stack/ports.js';
import type { Stack } from '../../stack/start-stack.js';
import { startSuiteStack } from '../support/local-target.js';
import { startOidcProvider, type OidcProviderHarness } from '../support/oidc-provider.js';

const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'];
const SPA = 'spa-browser';
const SETS = {
  default: { 'x-api-key': 'op-default-key' },
  clients: {
    [SPA]: { 'x-api-key': 'op-spa-key' },
    'partner-app': { 'x-api-key': 'op-partner-key' },
  },
};
/** The revocation bound the gate promises (`revocation.maxLatency`, 6 s by default). */
const REVOCATION_BOUND_MS = 6_000;

let provider: OidcProviderHarness;
let stack: Stack;
let scratch: string;
let context: BrowserContext;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'sg-op-spa-'));
  const port = await freePort();
  const gate = `http://127.0.0.1:${port}`;
  provider = await startOidcProvider({
    clients: ['partner-app'],
    browserClient: { clientId: SPA, redirectUri: `${gate}/` },
    backchannelLogoutUri: `${gate}/backchannel-logout`,
  });
  const secretsFile = join(scratch, 'secrets.json');
  writeFileSync(secretsFile, JSON.stringify(SETS));
  stack = await startSuiteStack({
    ports: { nginx: port },
    secretsFile,
    ownIdp: {
      issuer: provider.issuer,
      audience: provider.resource,
      clientId: SPA,
      logoutAudiences: [SPA],
    },
  });
  context = await chromium.launchPersistentContext(join(scratch, 'chromium'), {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_ARGS,
  });
  // The provider's development pages load a web font; nothing here reaches beyond loopback.
  await context.route(/^https?:\/\/(?!127\.0\.0\.1[:/])/, (route) => route.abort());
}, 180_000);

afterAll(async () => {
  await context?.close();
  await stack?.stop();
  await provider?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const claimsOf = (token: string) =>
  JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as Record<
    string,
    unknown
  >;

describe.sequential('the SPA in Chromium against node-oidc-provider', { timeout: 90_000 }, () => {
  let app: Page;
  let idToken: string;

  it("signs in at the provider (code + PKCE, resource, DPoP) and shows the SPA's own set", async () => {
    app = await context.newPage();
    const tokenResponse = app.waitForResponse(
      (response) => response.url() === provider.tokenEndpoint,
    );
    const secretRequest = app.waitForRequest((request) => request.url() === stack.urls.secret);
    await app.goto(stack.urls.gate);
    await app.getByRole('button', { name: 'Sign in', exact: true }).click();
    // The provider's development login page takes any login.
    await app.getByPlaceholder('Enter any login').fill('dana');
    await app.getByPlaceholder('and password').fill('any-password');
    await app.getByRole('button', { name: 'Sign-in' }).click();
    // Its consent page: the scope and the resource the SPA asked for.
    await app.getByRole('button', { name: 'Continue' }).click();
    await app.getByRole('heading', { name: 'Signed in' }).waitFor();
    await app.getByText(/^Fetched at /).waitFor();
    await app.getByRole('button', { name: 'Reveal x-api-key' }).click();
    const shown = app.locator('.secret', { hasText: 'x-api-key' }).locator('.secret-value');
    expect(await shown.innerText()).toBe(SETS.clients[SPA]['x-api-key']);

    const tokens = (await (await tokenResponse).json()) as {
      access_token: string;
      id_token: string;
    };
    idToken = tokens.id_token;
    expect(claimsOf(tokens.access_token)).toMatchObject({
      aud: provider.resource,
      client_id: SPA,
      sub: 'dana',
      cnf: { jkt: expect.any(String) },
    });
    expect((await secretRequest).headers().authorization).toBe(`DPoP ${tokens.access_token}`);
  });

  it('refuses the same token within the revocation bound once the user signs out at the provider', async () => {
    const discovery = (await (
      await fetch(`${provider.issuer}/.well-known/openid-configuration`)
    ).json()) as { end_session_endpoint: string };
    const idpTab = await context.newPage();
    const endSession = new URL(discovery.end_session_endpoint);
    endSession.searchParams.set('id_token_hint', idToken);
    endSession.searchParams.set('post_logout_redirect_uri', `${stack.urls.gate}/`);
    await idpTab.goto(endSession.href);
    const back = idpTab.waitForURL(`${stack.urls.gate}/`);
    await idpTab.getByRole('button', { name: 'Yes, sign me out' }).click();
    // The provider sends its logout tokens before it redirects back.
    await back;
    const signedOut = Date.now();

    let refusedAfter: number | undefined;
    while (refusedAfter === undefined && Date.now() - signedOut < REVOCATION_BOUND_MS + 2_000) {
      const answer = app.waitForResponse((response) => response.url() === stack.urls.secret);
      await app.getByRole('button', { name: 'Fetch secrets again' }).click();
      if ((await answer).status() === 401) refusedAfter = Date.now() - signedOut;
      else await app.waitForTimeout(200);
    }
    expect(refusedAfter).toBeDefined();
    expect(refusedAfter!).toBeLessThanOrEqual(REVOCATION_BOUND_MS);
    await app.getByRole('heading', { name: 'Your session has expired' }).waitFor();
    expect(await app.locator('main').innerText()).not.toContain('op-spa-key');
  });
});

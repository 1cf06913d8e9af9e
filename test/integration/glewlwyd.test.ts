// The own-IdP mode against Glewlwyd, an OpenID provider from Debian's packages that shares no code
// with the gate (test/support/glewlwyd.ts): the stack started as `npm start -- --issuer …
// --audience RESOURCE --client-id spa-demo --logout-audience spa-demo` starts it, the SPA in
// Chromium signs in at Glewlwyd's own login page (code + PKCE, RFC 8707 `resource`, DPoP), a
// confidential client uses client credentials with and without DPoP, and signing out at Glewlwyd
// reaches the gate over back-channel logout (logout tokens typed `JWT`, without `exp`).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../stack/ports.js';
import type { Stack } from '../../stack/start-stack.js';
import { startGlewlwyd, type GlewlwydHarness } from '../support/glewlwyd.js';
import { startSuiteStack } from '../support/local-target.js';
import { dpopProof, generateDpopKeyPair } from '../support/oidc-provider.js';

const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'];
const SETS = {
  default: { 'x-api-key': 'glewlwyd-default-key' },
  clients: {
    'spa-demo': { 'x-api-key': 'glewlwyd-spa-key' },
    'partner-app': { 'x-api-key': 'glewlwyd-partner-key' },
  },
};
/** The revocation bound the gate promises (`revocation.maxLatency`, 6 s by default). */
const REVOCATION_BOUND_MS = 6_000;

let idp: GlewlwydHarness;
let stack: Stack;
let scratch: string;
let context: BrowserContext;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'sg-glewlwyd-suite-'));
  const port = await freePort();
  const gate = `http://127.0.0.1:${port}`;
  idp = await startGlewlwyd({
    redirectUri: `${gate}/`,
    backchannelLogoutUri: `${gate}/backchannel-logout`,
  });
  const secretsFile = join(scratch, 'secrets.json');
  writeFileSync(secretsFile, JSON.stringify(SETS));
  stack = await startSuiteStack({
    ports: { nginx: port },
    secretsFile,
    ownIdp: {
      issuer: idp.issuer,
      audience: idp.resource,
      clientId: idp.spaClient,
      logoutAudiences: [idp.spaClient],
    },
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

async function secret(headers: Record<string, string> = {}) {
  const response = await fetch(stack.urls.secret, { headers });
  return { status: response.status, body: await response.text() };
}

describe.sequential('the stack against Glewlwyd', { timeout: 90_000 }, () => {
  it('tells the SPA to name the API with the RFC 8707 resource parameter', async () => {
    const config = (await (await fetch(stack.urls.config)).json()) as Record<string, unknown>;
    expect(config).toMatchObject({
      issuer: idp.issuer,
      clientId: 'spa-demo',
      audience: idp.resource,
      audienceParameters: 'resource',
    });
  });

  it("serves a client-credentials token the client's own set, nothing without a token", async () => {
    const token = await idp.clientCredentials();
    expect(claimsOf(token)).toMatchObject({ aud: idp.resource, client_id: 'partner-app' });
    const answer = await secret({ authorization: `Bearer ${token}` });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual(SETS.clients['partner-app']);
    const none = await secret();
    expect(none.status).toBe(401);
    expect(none.body).not.toContain('glewlwyd-');
  });

  it('serves a DPoP-bound token with a proof, and refuses it as a Bearer token', async () => {
    const keys = await generateDpopKeyPair();
    const token = await idp.clientCredentials({ dpop: keys });
    expect(claimsOf(token).cnf).toMatchObject({ jkt: expect.stringMatching(/^[\w-]{43}$/) });
    const proof = await dpopProof(keys, stack.urls.secret, 'GET', token);
    const bound = await secret({ authorization: `DPoP ${token}`, dpop: proof });
    expect(bound.status).toBe(200);
    expect(JSON.parse(bound.body)).toEqual(SETS.clients['partner-app']);
    const asBearer = await secret({ authorization: `Bearer ${token}` });
    expect(asBearer.status).toBe(401);
    expect(asBearer.body).not.toContain('glewlwyd-');
  });

  describe.sequential('the SPA in Chromium', () => {
    let app: Page;
    let idToken: string;

    it("signs in at Glewlwyd's login page (code + PKCE) and shows the SPA's own set", async () => {
      app = await context.newPage();
      const tokenResponse = app.waitForResponse((response) => response.url() === idp.tokenEndpoint);
      const secretRequest = app.waitForRequest((request) => request.url() === stack.urls.secret);
      await app.goto(stack.urls.gate);
      await app.getByRole('button', { name: 'Sign in', exact: true }).click();
      // Glewlwyd's own pages: password, then consent to the scope, then back to the app.
      await app.getByPlaceholder('Your username').fill(idp.user.username);
      await app.getByPlaceholder('Your password').fill(idp.user.password);
      await app.getByRole('button', { name: 'OK' }).click();
      await app.getByLabel('Secrets').check();
      // Continue only once the consent is stored, or Glewlwyd asks for it again.
      const granted = app.waitForResponse(
        (response) =>
          response.request().method() === 'PUT' && /\/auth\/grant\//.test(response.url()),
      );
      await app.getByRole('button', { name: 'Grant access' }).click();
      expect((await granted).ok()).toBe(true);
      await app.getByRole('button', { name: 'Continue' }).click();
      await app.getByRole('heading', { name: 'Signed in' }).waitFor();
      await app.getByText(/^Fetched at /).waitFor();
      await app.getByRole('button', { name: 'Reveal x-api-key' }).click();
      const shown = app.locator('.secret', { hasText: 'x-api-key' }).locator('.secret-value');
      expect(await shown.innerText()).toBe(SETS.clients['spa-demo']['x-api-key']);
      expect(await app.getByText(`Signed in as ${idp.user.name}`).isVisible()).toBe(true);

      const tokens = (await (await tokenResponse).json()) as {
        access_token: string;
        id_token: string;
        token_type: string;
      };
      idToken = tokens.id_token;
      // The resource parameter made `aud` the API (without it Glewlwyd puts the scope list there);
      // the token is bound to the page's DPoP key and sent with the DPoP scheme.
      expect(claimsOf(tokens.access_token)).toMatchObject({
        aud: idp.resource,
        client_id: 'spa-demo',
        cnf: { jkt: expect.any(String) },
      });
      expect((await secretRequest).headers().authorization).toBe(`DPoP ${tokens.access_token}`);
    });

    it('refuses the same token within the revocation bound once the user signs out at Glewlwyd', async () => {
      // Another tab ends the IdP session (RP-initiated logout at Glewlwyd's end_session page);
      // Glewlwyd then posts its logout token to the gate, and the app's token stops working.
      const idpTab = await context.newPage();
      const endSession = new URL(`${idp.issuer}/end_session`);
      endSession.searchParams.set('id_token_hint', idToken);
      endSession.searchParams.set('client_id', 'spa-demo');
      endSession.searchParams.set('post_logout_redirect_uri', `${stack.urls.gate}/`);
      await idpTab.goto(endSession.href);
      const ended = idpTab.waitForResponse(
        (response) =>
          response.request().method() === 'DELETE' && /\/session\//.test(response.url()),
      );
      await idpTab.getByRole('button', { name: 'Logout' }).click();
      expect((await ended).ok()).toBe(true);
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
      expect(await app.locator('main').innerText()).not.toContain('glewlwyd-spa-key');
    });
  });
});

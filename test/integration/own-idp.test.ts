// `npm start -- --issuer URL --jwks-uri URL --audience AUD --preset keycloak --secrets-file F`
// as a user runs it: the same runner, pointed at an IdP it does not start (oauth2-mock-server,
// started here, shaping its tokens as Keycloak does: header `typ: JWT`, claim `typ: Bearer`,
// `azp`, `aud` = the API plus `account`; https://www.keycloak.org/docs/latest/server_admin/#_audience).
// Real NGINX, the real verifier, no dev IdP.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OAuth2Server } from 'oauth2-mock-server';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../stack/ports.js';
import { REPO_ROOT, type Stack } from '../../stack/start-stack.js';
import { startSuiteStack } from '../support/local-target.js';

const AUDIENCE = 'secret-gate-api';
const SETS = {
  default: { 'x-api-key': 'kc-default-key' },
  clients: {
    'kc-spa': { 'x-api-key': 'kc-spa-key' },
    'kc-partner': { 'x-api-key': 'kc-partner-key' },
  },
};

let idp: OAuth2Server;
let stack: Stack;
let scratch: string;
let secretsFile: string;
/** Claims the next token gets on top of the Keycloak shape (`null` removes one). */
let shape: Record<string, unknown> = {};

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'sg-own-idp-'));
  idp = new OAuth2Server();
  await idp.issuer.keys.generate('RS256');
  const port = await freePort();
  idp.issuer.url = `http://127.0.0.1:${port}`;
  idp.service.on('beforeTokenSigning', (token, req) => {
    const body = req.body as Record<string, string>;
    const payload: Record<string, unknown> = {
      ...token.payload,
      azp: body.client_id,
      aud: [AUDIENCE, 'account'],
      typ: 'Bearer',
      sid: 'session-1',
      scope: body.scope ?? '',
      ...shape,
    };
    for (const [name, value] of Object.entries(payload)) if (value === null) delete payload[name];
    token.payload = payload as typeof token.payload;
  });
  await idp.start(port, '127.0.0.1');
  secretsFile = join(scratch, 'secrets.json');
  writeFileSync(secretsFile, JSON.stringify(SETS));
  stack = await startSuiteStack({
    secretsFile,
    ownIdp: {
      issuer: idp.issuer.url,
      jwksUri: `${idp.issuer.url}/jwks`,
      audience: AUDIENCE,
      preset: 'keycloak',
      clientId: 'kc-spa',
    },
  });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  await idp?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

async function token(clientId: string, scope = 'openid secrets:read', extra = {}) {
  shape = extra;
  const response = await fetch(`${idp.issuer.url}/token`, {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, scope }),
  });
  const body = (await response.json()) as { access_token: string };
  shape = {};
  return body.access_token;
}

const secret = (token?: string) =>
  fetch(
    stack.urls.secret,
    token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } },
  );

describe.sequential('the stack against an own IdP with the keycloak preset', () => {
  it('starts no dev IdP: only the verifier and NGINX run', () => {
    expect(stack.ownIdp).toBe(true);
    expect(stack.isRunning('idp')).toBe(false);
    expect(stack.pid('idp')).toBeUndefined();
    expect(stack.isRunning('verifier') && stack.isRunning('nginx')).toBe(true);
  });

  it('tells the SPA to sign in at that issuer with that client (config.json)', async () => {
    const config = (await (await fetch(stack.urls.config)).json()) as Record<string, unknown>;
    expect(config).toMatchObject({ issuer: idp.issuer.url, clientId: 'kc-spa' });
  });

  it('answers /secret without a token 401 and no secret', async () => {
    const response = await secret();
    expect(response.status).toBe(401);
    expect(await response.text()).not.toContain('kc-');
  });

  it("serves each client's own set to its Keycloak access token", async () => {
    const mine = await secret(await token('kc-spa'));
    expect(mine.status).toBe(200);
    expect(await mine.json()).toEqual(SETS.clients['kc-spa']);
    const partner = await secret(await token('kc-partner'));
    expect(partner.status).toBe(200);
    expect(await partner.json()).toEqual(SETS.clients['kc-partner']);
  });

  it.each([
    ['its ID token (typ ID, nonce)', { typ: 'ID', nonce: 'n-1' }, 401],
    ['its refresh token (typ Refresh)', { typ: 'Refresh' }, 401],
    ["a token whose only audience is Keycloak's default account", { aud: 'account' }, 401],
    ['a token for another API', { aud: ['other-api', 'account'] }, 401],
    ['a token naming no client (azp removed)', { azp: null }, 403],
  ])('refuses %s', async (_title, claims, status) => {
    const response = await secret(await token('kc-spa', 'openid secrets:read', claims));
    expect(response.status).toBe(status);
    expect(await response.text()).not.toContain('kc-');
  });

  it('logs why: a missing Audience mapper, a token naming no client', async () => {
    await secret(await token('kc-spa', 'openid secrets:read', { aud: 'account' }));
    await secret(await token('kc-spa', 'openid secrets:read', { azp: null }));
    const log = readFileSync(stack.files.logs.verifier, 'utf8');
    expect(log).toContain('Audience mapper');
    expect(log).toMatch(/"reason":"client_unknown".*no client claim \(\\"azp\\"\)/);
  });

  it('answers 403 to a token without the secrets:read scope', async () => {
    const response = await secret(await token('kc-spa', 'openid'));
    expect(response.status).toBe(403);
    expect(response.headers.get('www-authenticate')).toContain('insufficient_scope');
  });
});

describe.sequential(
  'npm start -- --issuer … --preset keycloak --secrets-file F (the command line)',
  () => {
    let cli: ChildProcess;
    let output: string[];
    let secretUrl: string;

    beforeAll(async () => {
      output = [];
      // The runtime directory lives in the scratch dir, which NGINX's workers must be able to enter.
      chmodSync(scratch, 0o755);
      const issuer = String(idp.issuer.url);
      cli = spawn(
        process.execPath,
        [
          ...['--import', 'tsx', 'stack/cli.ts', '--port', '0', '--verifier-port', '0'],
          ...['--runtime-dir', join(scratch, 'cli-run'), '--no-build'],
          ...['--issuer', issuer, '--jwks-uri', `${issuer}/jwks`],
          ...['--audience', AUDIENCE, '--preset', 'keycloak', '--client-id', 'kc-spa'],
          ...['--secrets-file', secretsFile, '--logout-audience', 'kc-spa'],
        ],
        {
          cwd: REPO_ROOT,
          stdio: ['ignore', 'pipe', 'inherit'],
          // A documented verifier setting reaches the verifier in this mode too.
          env: { ...process.env, VERIFIER_REQUIRED_SCOPES: 'openid' },
        },
      );
      const lines = createInterface({ input: cli.stdout! });
      secretUrl = await new Promise<string>((resolve, reject) => {
        cli.once('exit', (code) => reject(new Error(`npm start exited with ${code}`)));
        lines.on('line', (line) => {
          output.push(line);
          const found = /^\s+secrets\s+(http\S+)$/.exec(line);
          if (found?.[1] !== undefined) resolve(found[1]);
        });
      });
    }, 180_000);

    afterAll(async () => {
      if (cli?.exitCode !== null || cli.signalCode !== null) return;
      const exited = once(cli, 'exit');
      cli.kill('SIGTERM');
      await exited;
    });

    it('says the dev IdP is not started and names the issuer', () => {
      expect(output).toContain('· idp: not started (own IdP)');
      expect(
        output.some((line) => line.includes(String(idp.issuer.url)) && line.includes('keycloak')),
      ).toBe(true);
    });

    it("prints what the IdP's discovery says, the audience, the logout URL and the verifier's log", () => {
      const text = output.join('\n');
      expect(text).toMatch(/issuer +http:\/\/127\.0\.0\.1:\d+\n/);
      expect(text).toMatch(/JWKS +http:\/\/127\.0\.0\.1:\d+\/jwks/);
      expect(text).toMatch(/token endpoint +http:\/\/127\.0\.0\.1:\d+\/token/);
      expect(text).toMatch(/RFC 8707 +resource indicators/);
      expect(text).toMatch(/DPoP +/);
      expect(text).toMatch(/back-channel +logout/);
      expect(text).toContain(`audience   ${AUDIENCE}  (the tokens' "aud" must contain it)`);
      expect(text).toMatch(/logout +http:\/\/127\.0\.0\.1:\d+\/backchannel-logout .*kc-spa/);
      expect(text).toMatch(/refusals +\S+\/logs\/verifier\.log/);
    });

    it('honours VERIFIER_REQUIRED_SCOPES from its environment (openid instead of secrets:read)', async () => {
      const response = await fetch(secretUrl, {
        headers: { authorization: `Bearer ${await token('kc-partner', 'openid')}` },
      });
      expect(response.status).toBe(200);
    });

    it('turns the back-channel logout receiver on: a bad logout token gets 400, not 404', async () => {
      const logout = await fetch(secretUrl.replace(/\/secret$/, '/backchannel-logout'), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'logout_token=not.a.jwt',
      });
      expect(logout.status).toBe(400);
    });

    it("serves /secret 200 with that client's own set, 401 without a token", async () => {
      const allowed = await fetch(secretUrl, {
        headers: { authorization: `Bearer ${await token('kc-partner')}` },
      });
      expect(allowed.status).toBe(200);
      expect(await allowed.json()).toEqual(SETS.clients['kc-partner']);
      expect((await fetch(secretUrl)).status).toBe(401);
    });
  },
);

// A minted `token-exchange` value through real NGINX and the real verifier, with node-oidc-provider
// as the IdP: the caller's access token is traded at the provider's token endpoint (RFC 8693) and
// the exchanged token is delivered with the static set; an exchange the provider refuses is
// `502 mint_failed / exchange_refused`, never the static set.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownIdpVerifierConfig } from '../../stack/service-env.js';
import type { Stack } from '../../stack/start-stack.js';
import { call } from '../support/gate-table.js';
import { startSuiteStack } from '../support/local-target.js';
import { REFUSED_AUDIENCE } from '../support/oidc-provider-exchange.js';
import { startOidcProvider, type OidcProviderHarness } from '../support/oidc-provider.js';

const EXCHANGE_CLIENT = 'gate-exchange';
const SETS = {
  default: { 'x-api-key': 'exchange-test-default' },
  clients: { 'spa-demo': { 'x-api-key': 'exchange-test-spa-demo' } },
  policies: { refused: { default: { 'x-api-key': 'exchange-test-refused' }, clients: {} } },
};

let provider: OidcProviderHarness;
let stack: Stack;
let scratch: string;

/** The `token-exchange` entry for `audience`, authenticating as the exchange client. */
const exchangeEntry = (secretFile: string, audience: string) => ({
  kind: 'token-exchange',
  clientId: EXCHANGE_CLIENT,
  clientAuth: { method: 'client_secret_basic', secretFile },
  audience,
  ttlSeconds: 120,
});

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'sg-minted-exchange-'));
  provider = await startOidcProvider({ tokenExchangeClient: EXCHANGE_CLIENT });
  const secretsFile = join(scratch, 'secrets.json');
  writeFileSync(secretsFile, JSON.stringify(SETS));
  const secretFile = join(scratch, 'exchange-client.secret');
  writeFileSync(secretFile, `${EXCHANGE_CLIENT}-secret`, { mode: 0o600 });
  const config = ownIdpVerifierConfig({
    issuer: provider.issuer,
    audience: provider.resource,
    preset: 'rfc9068',
  }) as { policies: Record<string, Record<string, unknown>> };
  const secret = config.policies.secret ?? {};
  config.policies.secret = {
    ...secret,
    mint: { 'partner-token': exchangeEntry(secretFile, 'partner-api') },
  };
  config.policies.refused = {
    ...secret,
    mint: { 'partner-token': exchangeEntry(secretFile, REFUSED_AUDIENCE) },
  };
  const configFile = join(scratch, 'verifier.json');
  writeFileSync(configFile, JSON.stringify(config));
  stack = await startSuiteStack({
    secretsFile,
    ownIdp: { issuer: provider.issuer, audience: provider.resource, preset: 'rfc9068' },
    env: { verifier: { VERIFIER_CONFIG: configFile } },
  });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  await provider?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('minted token-exchange value through NGINX (node-oidc-provider)', () => {
  it('delivers the token the provider exchanged for the caller, with its expiry', async () => {
    const before = provider.hits('/token');
    const answer = await call(stack.urls.secret, await provider.token('spa-demo'));
    expect(answer.status, answer.body).toBe(200);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    const body = JSON.parse(answer.body) as {
      'x-api-key': string;
      'partner-token': string;
      expires_at: Record<string, number>;
    };
    expect(body['x-api-key']).toBe('exchange-test-spa-demo');
    // The provider knows the delivered token: issued for the caller, to the partner audience.
    const issued = await provider.issuedToken(body['partner-token']);
    expect(issued).toEqual({ accountId: 'spa-demo', aud: ['partner-api'] });
    expect(body.expires_at['partner-token']).toBeGreaterThan(Date.now() / 1000);
    expect(provider.hits('/token')).toBeGreaterThan(before + 1);
  });

  it('answers 502 exchange_refused, never the static set, when the provider refuses', async () => {
    const answer = await call(
      `${stack.urls.gate}/secret/refused`,
      await provider.token('spa-demo'),
    );
    expect(answer.status).toBe(502);
    expect(JSON.parse(answer.body)).toEqual({ error: 'mint_failed', reason: 'exchange_refused' });
    expect(answer.body).not.toContain('exchange-test');
  });
});

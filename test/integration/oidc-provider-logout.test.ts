// node-oidc-provider (a certified OpenID Provider) as an independent sender of back-channel
// logout tokens: its own logout token for a subject makes the verifier refuse that subject's
// older access tokens — from the same provider — and nothing else.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../stack/ports.js';
import { statusOf } from '../../verifier/src/testing/answer.js';
import { buildService, type TestService } from '../../verifier/src/testing/service.js';
import { startOidcProvider, type OidcProviderHarness } from '../support/oidc-provider.js';

let provider: OidcProviderHarness;
let gate: TestService;

beforeAll(async () => {
  const port = await freePort();
  provider = await startOidcProvider({
    backchannelLogoutUri: `http://127.0.0.1:${port}/backchannel-logout`,
  });
  gate = buildService(
    {},
    {
      file: {
        issuers: [
          {
            issuer: provider.issuer,
            audience: provider.resource,
            jwksUri: provider.jwksUri,
            algorithms: ['ES256'],
            logoutAudiences: ['spa-demo'],
          },
        ],
        policies: { secret: { issuers: [provider.issuer], scopes: ['secrets:read'] } },
      },
    },
  );
  await gate.service.start();
  await gate.service.listen({ kind: 'tcp', host: '127.0.0.1', port });
}, 30_000);
afterAll(async () => {
  await gate?.service.stop(0);
  await provider?.close();
});

const ask = async (token: string) =>
  gate.service.authorize({ policy: 'secret', authorization: `Bearer ${token}` });

describe("node-oidc-provider's back-channel logout", () => {
  it("is accepted (200) and refuses the subject's older tokens, cached ones included", async () => {
    // Client-credentials tokens speak for the client: `sub` is the client id.
    const spa = await provider.token('spa-demo');
    const partner = await provider.token('partner-app');
    expect(statusOf(await ask(spa))).toBe(204);

    await provider.backchannelLogout('spa-demo', 'spa-demo');

    expect((await ask(spa)).reason).toBe('token_revoked');
    expect(statusOf(await ask(partner))).toBe(204);
    expect(await gate.service.metrics.render()).toMatch(
      /verifier_revocations_applied_total\{channel="backchannel_logout",event="backchannel-logout"\} 1/,
    );
  });

  it("keeps serving the subject's tokens issued after the logout", async () => {
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(statusOf(await ask(await provider.token('spa-demo')))).toBe(204);
  });

  it('refuses a logout token addressed to a client that is not a logout audience', async () => {
    const partner = await provider.token('partner-app');
    // The provider addresses it to `partner-app`; only `spa-demo` is configured.
    await expect(provider.backchannelLogout('partner-app', 'partner-app')).rejects.toThrow(/400/);
    expect(statusOf(await ask(partner))).toBe(204);
  });
});

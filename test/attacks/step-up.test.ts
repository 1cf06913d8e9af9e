// Step-up (RFC 9470) and Protected Resource Metadata (RFC 9728) through the real NGINX, verifier and
// dev IdP: the `secret` policy of this stack requires a multi-factor sign-in of at most MAX_AGE
// seconds ago. Tokens without the class, with a stale sign-in or with neither get the byte-exact
// challenge and no secret; a valid one gets its set, never past `auth_time` + `maxAge`; an allow
// cached for a policy without step-up never answers for this one, at the edge or in the verifier.
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAttackStack, type AttackStack } from './attack-stack.js';

const MFA = 'urn:secret-gate:mfa';
const MAX_AGE = 6;
const LEVEL = 'A different authentication level is required';
const RECENT = 'More recent authentication is required';
const now = () => Math.floor(Date.now() / 1000);

describe('step-up (RFC 9470) and protected resource metadata (RFC 9728) through NGINX', () => {
  let gate: AttackStack;
  let metadataUrl: string;
  const challenge = (description: string) =>
    `Bearer realm="secret-gate", error="insufficient_user_authentication", error_description="${description}", acr_values="${MFA}", max_age="${MAX_AGE}", resource_metadata="${metadataUrl}"`;
  const mint = (claims: Record<string, unknown>) => gate.stack.mintToken({ claims });
  const get = (token: string) =>
    gate.send({
      path: '/secret',
      headers: { authorization: `Bearer ${token}` },
      label: 'step-up /secret',
      earned: true,
    });
  /** /verify itself, as NGINX asks it (with NGINX's edge key): the answer's headers are visible. */
  const verify = (token: string, policy: string) => {
    const keyFile = gate.stack.env.verifier.VERIFIER_EDGE_KEY_FILE;
    const key: Record<string, string> =
      keyFile === undefined ? {} : { 'x-sg-edge-key': readFileSync(keyFile, 'utf8') };
    return fetch(`${gate.stack.urls.verifier}/verify`, {
      headers: { authorization: `Bearer ${token}`, 'x-sg-policy': policy, ...key },
    });
  };

  beforeAll(async () => {
    gate = await startAttackStack({
      policySets: { open: { default: { 'x-api-key': 'open-set' } } },
      // The revocation receiver's latency bound would cap the edge at 5 s: lifted past maxAge.
      env: { verifier: { VERIFIER_REVOCATION_MAX_LATENCY: '61s' } },
      configure: (config) => {
        // A long edge cap, so `auth_time` + `maxAge` is the bound that is measured.
        config.cache = { edgeTtl: 60 };
        for (const iss of config.issuers) iss.clockTolerance = 0;
        const secret = config.policies.secret!;
        Object.assign(secret, { acrValues: [MFA], maxAge: MAX_AGE });
        config.policies.open = { issuers: secret.issuers, scopes: secret.scopes };
      },
    });
    metadataUrl = `${gate.stack.urls.gate}/.well-known/oauth-protected-resource`;
  }, 120_000);
  afterAll(async () => {
    await gate?.stop();
  });

  it('serves the metadata every challenge names, rendered from the configuration', async () => {
    expect(gate.stack.env.verifier.VERIFIER_RESOURCE_METADATA_URL).toBe(metadataUrl);
    const answer = await fetch(metadataUrl);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('application/json');
    expect(await answer.json()).toEqual({
      resource: gate.stack.urls.gate,
      authorization_servers: [gate.stack.urls.issuer],
      scopes_supported: ['secrets:read'],
      bearer_methods_supported: ['header'],
      dpop_signing_alg_values_supported: ['ES256', 'ES384', 'PS256', 'RS256', 'EdDSA'],
      dpop_bound_access_tokens_required: false,
    });
  });

  it('names the metadata in the challenge to a request without a token', async () => {
    const answer = await gate.send({ path: '/secret', label: 'no token' });
    expect(answer.status).toBe(401);
    expect(answer.headers['www-authenticate']).toBe(
      `Bearer realm="secret-gate", resource_metadata="${metadataUrl}"`,
    );
  });

  const rows: Array<[string, () => Record<string, unknown>, string]> = [
    [
      'a token whose acr is not accepted',
      () => ({ acr: 'urn:secret-gate:pwd', auth_time: now() }),
      LEVEL,
    ],
    ['a token with a stale auth_time', () => ({ acr: MFA, auth_time: now() - 60 }), RECENT],
    ['a token with neither claim', () => ({}), LEVEL],
  ];
  it.each(rows)(
    'answers %s 401 with the RFC 9470 challenge and no secret',
    async (_, claims, description) => {
      const token = await mint(claims());
      const answer = await get(token);
      expect(answer.status).toBe(401);
      expect(answer.headers['www-authenticate']).toBe(challenge(description));
      expect(answer.headers['content-type']).toBe('application/json');
      expect(answer.headers['cache-control']).toBe('no-store');
      expect(JSON.parse(answer.body)).toEqual({
        error: 'insufficient_user_authentication',
        message: 'a stronger or more recent sign-in is required',
      });
      expect(answer.body).not.toContain('sg-canary');
      // Never stored at the edge.
      const direct = await verify(token, 'secret');
      expect(direct.status).toBe(401);
      expect(direct.headers.get('x-accel-expires')).toBe('0');
      expect(direct.headers.get('www-authenticate')).toBe(challenge(description));
    },
  );

  it('gives a token that meets the requirements its set', async () => {
    const answer = await get(await mint({ acr: MFA, auth_time: now() }));
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual(gate.canaries.sets['spa-demo']);
  });

  it('never answers the stricter policy from an allow cached for a weaker one, at the edge', async () => {
    // The policy `open` (no step-up) at /secret/open: the same NGINX, the same edge cache.
    const openUrl = `${gate.stack.urls.gate}/secret/open`;
    const token = await mint({ acr: 'urn:secret-gate:pwd', auth_time: now() });
    for (let i = 0; i < 3; i++) {
      const open = await fetch(openUrl, { headers: { authorization: `Bearer ${token}` } });
      expect(open.status).toBe(200);
    }
    const answer = await get(token);
    expect(answer.status).toBe(401);
    expect(answer.headers['www-authenticate']).toBe(challenge(LEVEL));
  });

  it("never answers the stricter policy from the verifier's cached token, on every request", async () => {
    const token = await mint({ auth_time: now() });
    const open = await verify(token, 'open');
    expect(open.status).toBe(204);
    expect(Number(open.headers.get('x-accel-expires'))).toBeGreaterThan(MAX_AGE);
    for (let i = 0; i < 3; i++) {
      const strict = await verify(token, 'secret');
      expect(strict.status).toBe(401);
      expect(strict.headers.get('www-authenticate')).toBe(challenge(LEVEL));
    }
    expect((await verify(token, 'open')).status).toBe(204);
  });

  it('lets NGINX reuse an allow only until auth_time + maxAge, then refuses it', async () => {
    const authTime = now() - 2;
    const token = await mint({ acr: MFA, auth_time: authTime });
    const direct = await verify(token, 'secret');
    expect(direct.status).toBe(204);
    const ttl = Number(direct.headers.get('x-accel-expires'));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(authTime + MAX_AGE - Math.floor(Date.now() / 1000) + 1);
    expect(ttl).toBeLessThanOrEqual(MAX_AGE);
    const end = (authTime + MAX_AGE) * 1000;
    let lastAllowed = 0;
    let firstRefused = 0;
    let refusal = '';
    while (Date.now() < end + 3000) {
      const answer = await get(token);
      if (answer.status === 200) lastAllowed = Date.now();
      else if (firstRefused === 0) {
        firstRefused = Date.now();
        refusal = String(answer.headers['www-authenticate']);
      }
      await sleep(50);
    }
    expect(lastAllowed).toBeGreaterThan(0);
    // Allowed through `auth_time` + `maxAge` (a whole second, no tolerance here), never after.
    expect(lastAllowed).toBeLessThan(end + 1000);
    expect(firstRefused).toBeGreaterThan(0);
    expect(firstRefused).toBeLessThan(end + 1000 + 100);
    expect(refusal).toBe(challenge(RECENT));
  }, 20_000);
});

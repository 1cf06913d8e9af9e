// Secret sets belong to an (issuer, client id) pair, and the client id reaches NGINX unaltered or
// not at all. End to end: a second issuer on the `secret` policy whose client happens to be named
// like one of the first issuer's, and client ids NGINX would trim, cut or need to encode.
import { createServer, type Server } from 'node:http';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../stack/ports.js';
import { startStack } from '../../stack/start-stack.js';
import { startAttackStack, type AttackStack } from './attack-stack.js';
import { createAttackerKey } from './tokens.js';

const AUDIENCE = 'secret-gate-api';
// Issuer B: a real, configured, trusted issuer — just not the one the client sets were written for.
const keyB = createAttackerKey('issuer-b-key');
let gate: AttackStack;
let issuerB: string;
let jwksB: Server;

function mintFromB(claims: Record<string, unknown>): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ aud: AUDIENCE, sub: 'user-at-b', scope: 'secrets:read', ...claims })
    .setProtectedHeader({ alg: 'RS256', kid: keyB.kid, typ: 'at+jwt' })
    .setIssuer(issuerB)
    .setIssuedAt(now)
    .setExpirationTime(now + 300)
    .sign(keyB.privateKey);
}

beforeAll(async () => {
  const port = await freePort();
  issuerB = `http://127.0.0.1:${port}`;
  jwksB = createServer((_req, res) =>
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ keys: [keyB.jwk] })),
  );
  await new Promise<void>((resolve) => jwksB.listen(port, '127.0.0.1', resolve));
  gate = await startAttackStack({
    configure: (config) => {
      config.issuers.push({
        type: 'jwt',
        issuer: issuerB,
        audience: AUDIENCE,
        jwksUri: `${issuerB}/jwks`,
        algorithms: ['RS256'],
        requireTyp: 'at+jwt',
      });
      for (const policy of Object.values(config.policies)) policy.issuers.push(issuerB);
    },
  });
}, 120_000);

afterAll(async () => {
  await gate?.stop();
  await new Promise((resolve) => jwksB?.close(resolve));
});

const secretWith = (token: string, label: string, earned = true) =>
  gate.send({ path: '/secret', headers: { authorization: `Bearer ${token}` }, label, earned });

describe('secret sets scoped by issuer', () => {
  it("gives issuer A's client its own set", async () => {
    const answer = await secretWith(
      await gate.stack.mintToken({ clientId: 'spa-demo' }),
      'A spa-demo',
    );
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual(gate.canaries.sets['spa-demo']);
  });

  it("never gives issuer B's client of the same name issuer A's set: B gets the default set", async () => {
    const answer = await secretWith(await mintFromB({ azp: 'spa-demo' }), 'B spa-demo');
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual(gate.canaries.sets.default);
    for (const value of Object.values(gate.canaries.sets['spa-demo']!))
      expect(answer.body).not.toContain(value);
  });

  it('refuses to start on an ambiguous secrets file: a flat "clients" map and no issuer to own it', async () => {
    await expect(startStack({ env: { nginx: { SG_SECRETS_ISSUER: '' } } })).rejects.toThrow(
      /"clients" is ambiguous/,
    );
  });
});

describe('client ids NGINX would alter', () => {
  it.each([
    ['a trailing space', 'spa-demo '],
    ['a leading space', ' spa-demo'],
    ['a tab', '\tspa-demo'],
    ['characters NGINX would need encoded', 'spa-démo'],
    ['more than 256 characters', `${'x'.repeat(256)}spa-demo`],
  ])('refuses a client id with %s: 401 client_id_invalid, no secret', async (_, azp) => {
    const token = await gate.stack.mintToken({ claims: { azp } });
    const answer = await secretWith(
      token,
      `client id with ${JSON.stringify(azp).slice(0, 20)}`,
      false,
    );
    expect(answer.status).toBe(401);
    expect(answer.headers['www-authenticate']).toContain('error_description="client_id_invalid"');
    expect(gate.canaries.values.some((value) => answer.body.includes(value))).toBe(false);
  });

  it('refuses such an id from issuer B the same way', async () => {
    const answer = await secretWith(
      await mintFromB({ azp: 'spa-demo ' }),
      'B trailing space',
      false,
    );
    expect(answer.status).toBe(401);
  });
});

describe('never leaked', () => {
  it('no secret in any answer a valid token did not earn, no token in any log line, no 500', () => {
    expect(gate.watch.scan(gate.readLogs())).toEqual([]);
    expect(gate.serverErrors).toEqual([]);
  });
});

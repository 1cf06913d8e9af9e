// An opaque token that its authorization server bound to a key (RFC 9449 §6.2: `cnf.jkt` in the
// introspection answer) is held to its proofs at the real gate exactly like a bound JWT: sent as
// Bearer it is refused, with a fresh proof by that key it gets the secret, a replayed proof does
// not, and a binding the gate cannot check is refused whatever the scheme. The authorization
// server is a stand-in on loopback that the `secret` policy (`dpop: allowed`) trusts.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signProof, thumbprintOf } from '../../verifier/src/testing/dpop-proof.js';
import { freePort } from '../../stack/ports.js';
import { startAttackStack, type Answer, type AttackStack } from './attack-stack.js';

let gate: AttackStack;
let server: Server;
let jkt: string;
/** Opaque tokens the stand-in knows, and the `cnf` its answer gives each. */
const tokens = new Map<string, unknown>();

const opaque = (cnf: unknown) => {
  const token = randomBytes(32).toString('base64url');
  tokens.set(token, cnf);
  return token;
};

beforeAll(async () => {
  jkt = await thumbprintOf('ec');
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const token = new URLSearchParams(body).get('token') ?? '';
      const answer = tokens.has(token)
        ? {
            active: true,
            sub: 'opaque-user',
            client_id: 'spa-demo',
            scope: 'secrets:read',
            aud: 'secret-gate-api',
            token_type: 'DPoP',
            cnf: tokens.get(token),
            exp: Math.floor(Date.now() / 1000) + 600,
          }
        : { active: false };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  gate = await startAttackStack({
    configure(config) {
      config.issuers.push({
        type: 'introspection',
        issuer,
        endpoint: `${issuer}/introspect`,
        clientId: 'secret-gate',
        clientSecret: 'introspection-client-secret',
        audience: 'secret-gate-api',
      });
      config.policies.secret?.issuers.push(issuer);
    },
  });
}, 120_000);

afterAll(async () => {
  await gate?.stop();
  await new Promise((resolve) => server?.close(resolve));
});

const hasSecret = (answer: Answer) =>
  gate.canaries.values.some((value) => answer.body.includes(value));

async function send(label: string, scheme: 'Bearer' | 'DPoP', token: string, proof?: string) {
  if (proof !== undefined) gate.watch.recordToken(proof);
  return gate.send({
    path: '/secret',
    headers: {
      authorization: `${scheme} ${token}`,
      ...(proof === undefined ? {} : { dpop: proof }),
    },
    label,
    earned: scheme === 'DPoP' && proof !== undefined,
  });
}

const proofFor = (token: string) => signProof({ htu: gate.stack.urls.secret, accessToken: token });

describe('a DPoP-bound introspected token at /secret', () => {
  it('is refused as a Bearer token, with no secret, each time', async () => {
    const token = opaque({ jkt });
    for (let i = 0; i < 2; i++) {
      const answer = await send('opaque bound token as Bearer', 'Bearer', token);
      expect(answer.status).toBe(401);
      expect(answer.headers['www-authenticate']).toMatch(/^DPoP error="invalid_token"/);
      expect(hasSecret(answer)).toBe(false);
    }
  });

  it('gets the secret with a fresh proof by its key, for every request, and never for a replayed one', async () => {
    const token = opaque({ jkt });
    const proof = await proofFor(token);
    const first = await send('opaque bound token, fresh proof', 'DPoP', token, proof);
    expect(first.status).toBe(200);
    expect(hasSecret(first)).toBe(true);
    const again = await send(
      'opaque bound token, next proof',
      'DPoP',
      token,
      await proofFor(token),
    );
    expect(again.status).toBe(200);
    const replayed = await send('opaque bound token, replayed proof', 'DPoP', token, proof);
    expect(replayed.status).toBe(401);
    expect(hasSecret(replayed)).toBe(false);
  });

  it.each([
    ['another confirmation method', { 'x5t#S256': 'bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2' }],
    ['a malformed thumbprint', { jkt: 'not-a-thumbprint' }],
    ['no "cnf" with token_type DPoP', undefined],
  ])('is refused when its binding cannot be honoured: %s', async (_title, cnf) => {
    const token = opaque(cnf);
    for (const answer of [
      await send('unusable cnf as Bearer', 'Bearer', token),
      await send('unusable cnf with a proof', 'DPoP', token, await proofFor(token)),
    ]) {
      expect(answer.status).toBe(401);
      expect(hasSecret(answer)).toBe(false);
    }
  });

  it('leaks nothing and answers no 500 along the way', () => {
    for (const token of tokens.keys()) gate.watch.recordToken(token);
    expect(gate.watch.scan(gate.readLogs())).toEqual([]);
    expect(gate.serverErrors).toEqual([]);
  });
});

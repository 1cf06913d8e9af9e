// DPoP (RFC 9449) attacks against the real gate: a token bound to a fixed key by the dev IdP, then
// every proof an attacker could forge, replay or bend. Each is a 401 with a `DPoP` challenge and no
// secret; a fresh proof by the right key gets the secret, and an unbound bearer token still works
// (the `secret` policy has `dpop: allowed`).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  hmacProof,
  hugeExponentRsaKey,
  privateProofJwk,
  proofJwk,
  signProof,
  signRsaProof,
  thumbprintOf,
  unsignedProof,
  type ProofOptions,
} from '../../verifier/src/testing/dpop-proof.js';
import { startAttackStack, type Answer, type AttackStack } from './attack-stack.js';

let gate: AttackStack;
let bound: string;
let bearer: string;
let secretUrl: string;

const hasSecret = (answer: Answer) =>
  gate.canaries.values.some((value) => answer.body.includes(value));

beforeAll(async () => {
  gate = await startAttackStack();
  secretUrl = gate.stack.urls.secret;
  const tokenEndpoint = gate.stack.urls.tokenEndpoint;
  const response = await fetch(tokenEndpoint, {
    method: 'POST',
    headers: { DPoP: await signProof({ htm: 'POST', htu: tokenEndpoint }) },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: 'spa-demo',
      scope: 'secrets:read',
    }),
  });
  const body = (await response.json()) as { access_token: string; token_type: string };
  expect(body.token_type).toBe('DPoP');
  bound = body.access_token;
  bearer = await gate.stack.mintToken();
}, 120_000);

afterAll(async () => {
  await gate?.stop();
});

const proof = (options: Partial<ProofOptions> = {}) =>
  signProof({ htu: secretUrl, accessToken: bound, ...options });

function send(label: string, headers: Record<string, string | string[]>, earned = false) {
  for (const value of [headers.dpop ?? []].flat()) gate.watch.recordToken(value);
  return gate.send({ path: '/secret', headers, label, earned });
}

function expectDpopRefusal(answer: Answer): void {
  expect(answer.status).toBe(401);
  expect(answer.headers['www-authenticate']).toMatch(
    /^DPoP error="[a-z_]+", .*algs="[A-Z0-9 a-z]+"/,
  );
  expect(hasSecret(answer)).toBe(false);
}

describe('DPoP-bound tokens at /secret', () => {
  it('the dev IdP bound the token to the proof key', async () => {
    const payload = JSON.parse(Buffer.from(bound.split('.')[1]!, 'base64url').toString()) as {
      cnf?: { jkt?: string };
    };
    expect(payload.cnf?.jkt).toBe(await thumbprintOf('ec'));
  });

  it('answers 200 with the secret to the token and a fresh proof, for every request', async () => {
    for (let i = 0; i < 3; i++) {
      const answer = await send(
        'dpop: fresh proof',
        { authorization: `DPoP ${bound}`, dpop: await proof() },
        true,
      );
      expect(answer.status).toBe(200);
      expect(hasSecret(answer)).toBe(true);
    }
  });

  it('still serves an unbound bearer token (dpop: allowed)', async () => {
    const answer = await send('dpop: plain bearer', { authorization: `Bearer ${bearer}` }, true);
    expect(answer.status).toBe(200);
  });
});

describe('DPoP attacks: each a 401 with a DPoP challenge and no secret', () => {
  it('a replayed proof', async () => {
    const used = await proof();
    const first = await send(
      'dpop: first use',
      { authorization: `DPoP ${bound}`, dpop: used },
      true,
    );
    expect(first.status).toBe(200);
    expectDpopRefusal(await send('dpop: replay', { authorization: `DPoP ${bound}`, dpop: used }));
  });

  const forged: Array<[string, () => Promise<string> | string]> = [
    ['a proof for another URL', () => proof({ htu: secretUrl.replace('/secret', '/hello') })],
    ['a proof for another host', () => proof({ htu: 'https://evil.example/secret' })],
    ['a proof for another method', () => proof({ htm: 'POST' })],
    ['a proof whose iat is too old', () => proof({ iat: Math.floor(Date.now() / 1000) - 600 })],
    [
      'a proof whose iat is in the future',
      () => proof({ iat: Math.floor(Date.now() / 1000) + 600 }),
    ],
    ['a proof without ath', () => proof({ claims: { ath: undefined } })],
    ['a proof with the ath of another token', () => proof({ accessToken: bearer })],
    ['a proof from another key than cnf.jkt', () => proof({ key: 'ecB' })],
    ['a proof whose header key did not sign it', () => proof({ header: { jwk: proofJwk('ecB') } })],
    [
      'a proof whose jwk carries private members',
      () => proof({ header: { jwk: privateProofJwk('ec') } }),
    ],
    ['an alg none proof', () => unsignedProof({ htu: secretUrl, accessToken: bound })],
    ['an HS256 proof', () => hmacProof({ htu: secretUrl, accessToken: bound })],
    ['an oversized proof', async () => `${await proof()}${'A'.repeat(3000)}`],
    ['a garbage proof', () => 'garbage'],
  ];

  it.each(forged)('%s', async (name, make) => {
    expectDpopRefusal(
      await send(`dpop: ${name}`, { authorization: `DPoP ${bound}`, dpop: await make() }),
    );
  });

  it('a proof by an RSA key whose exponent is as long as its modulus: invalid_dpop_proof, its signature never checked', async () => {
    // The key signed this proof soundly; checking it would cost milliseconds of CPU per request.
    const { privateKey, jwk } = hugeExponentRsaKey();
    const dpop = signRsaProof(privateKey, jwk, { htu: secretUrl, accessToken: bound });
    const answer = await send('dpop: huge RSA exponent', { authorization: `DPoP ${bound}`, dpop });
    expectDpopRefusal(answer);
    expect(answer.headers['www-authenticate']).toContain('error="invalid_dpop_proof"');
  });

  it('a proof by another sound key than cnf.jkt: invalid_token, as the binding fails', async () => {
    const answer = await send('dpop: key not cnf.jkt', {
      authorization: `DPoP ${bound}`,
      dpop: await proof({ key: 'rsaA' }),
    });
    expectDpopRefusal(answer);
    expect(answer.headers['www-authenticate']).toContain('error="invalid_token"');
  });

  it('the bound token as Bearer (no downgrade), with or without a proof', async () => {
    expectDpopRefusal(await send('dpop: bound as Bearer', { authorization: `Bearer ${bound}` }));
    expectDpopRefusal(
      await send('dpop: bound as Bearer + proof', {
        authorization: `Bearer ${bound}`,
        dpop: await proof(),
      }),
    );
  });

  it('the DPoP scheme with an unbound token', async () => {
    expectDpopRefusal(
      await send('dpop: unbound as DPoP', {
        authorization: `DPoP ${bearer}`,
        dpop: await signProof({ htu: secretUrl, accessToken: bearer }),
      }),
    );
  });

  it('the bound token without any proof', async () => {
    expectDpopRefusal(await send('dpop: no proof', { authorization: `DPoP ${bound}` }));
  });

  it('two DPoP headers, even when the first is valid', async () => {
    expectDpopRefusal(
      await send('dpop: two headers', {
        authorization: `DPoP ${bound}`,
        dpop: [await proof(), await proof()],
      }),
    );
  });
});

describe('DPoP never leaked', () => {
  it('no token or proof in any log line, no secret in an unearned answer, no 500', () => {
    expect(gate.watch.scan(gate.readLogs())).toEqual([]);
    expect(gate.serverErrors).toEqual([]);
  });
});

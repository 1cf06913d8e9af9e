// DPoP material for the benchmark: a key, a token the dev IdP bound to it, and a file of proofs for
// /secret, one per request (the verifier refuses a proof it has seen, so none may repeat).
import { randomUUID } from 'node:crypto';
import { createHash } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

export interface DpopClient {
  readonly token: string;
  /** `count` fresh proofs for GET `url` with this token; `iat` is now. */
  proofs(url: string, count: number): Promise<string[]>;
}

async function proof(
  key: { privateKey: CryptoKey; jwk: JWK },
  claims: Record<string, unknown>,
): Promise<string> {
  return new SignJWT({ jti: randomUUID(), iat: Math.floor(Date.now() / 1000), ...claims })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: key.jwk })
    .sign(key.privateKey);
}

/** A fresh ES256 key and a client-credentials token bound to it by the IdP at `issuer`. */
export async function createDpopClient(issuer: string): Promise<DpopClient> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const { kty, crv, x, y } = await exportJWK(publicKey);
  const key = { privateKey, jwk: { kty, crv, x, y } };
  const tokenUrl = `${issuer}/token`;
  const response = await fetch(tokenUrl, {
    method: 'POST',
    headers: { DPoP: await proof(key, { htm: 'POST', htu: tokenUrl }) },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: 'spa-demo',
      scope: 'secrets:read',
    }),
  });
  const body = (await response.json()) as { access_token?: string; token_type?: string };
  if (body.token_type !== 'DPoP' || !body.access_token)
    throw new Error(`the IdP did not issue a DPoP token (${response.status})`);
  const token = body.access_token;
  const ath = createHash('sha256').update(token).digest('base64url');
  return {
    token,
    async proofs(url, count) {
      const lines: string[] = [];
      for (let i = 0; i < count; i++) lines.push(await proof(key, { htm: 'GET', htu: url, ath }));
      return lines;
    },
  };
}

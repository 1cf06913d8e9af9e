// A pool of distinct access tokens from the dev IdP (client-credentials grant), so every simulated
// user holds its own token and the verifier's cache sees realistic traffic; and the IdP's RS256
// key as SPKI, for the njs gate that verifies signatures itself.
import { createPublicKey, type JsonWebKey } from 'node:crypto';
import { writeFileSync } from 'node:fs';

export interface TokenRequest {
  readonly issuer: string;
  readonly count: number;
  readonly clientId?: string;
  readonly scope?: string;
  /** Parallel token requests; the IdP signs one token per request. */
  readonly concurrency?: number;
}

async function discover(issuer: string): Promise<{ token_endpoint: string; jwks_uri: string }> {
  const reply = await fetch(`${issuer}/.well-known/openid-configuration`);
  if (!reply.ok) throw new Error(`discovery at ${issuer} answered ${reply.status}`);
  return (await reply.json()) as { token_endpoint: string; jwks_uri: string };
}

/** Mints `count` distinct access tokens; fails if the IdP refuses or repeats a token. */
export async function mintTokens(request: TokenRequest): Promise<string[]> {
  const { token_endpoint: endpoint } = await discover(request.issuer);
  const body = new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: request.clientId ?? 'spa-demo',
    scope: request.scope ?? 'secrets:read',
  }).toString();
  const tokens = new Set<string>();
  let next = 0;
  async function worker(): Promise<void> {
    while (next < request.count) {
      next += 1;
      const reply = await fetch(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body,
      });
      const json = (await reply.json()) as { access_token?: unknown };
      if (!reply.ok || typeof json.access_token !== 'string') {
        throw new Error(`token endpoint answered ${reply.status}`);
      }
      tokens.add(json.access_token);
    }
  }
  await Promise.all(Array.from({ length: request.concurrency ?? 8 }, worker));
  if (tokens.size !== request.count) {
    throw new Error(`asked for ${request.count} distinct tokens, the IdP gave ${tokens.size}`);
  }
  return [...tokens];
}

/** Writes one token per line (the format the locustfile and the wrk script read). */
export function writeTokenFile(path: string, tokens: readonly string[]): void {
  writeFileSync(path, tokens.join('\n') + '\n', { mode: 0o600 });
}

/** The issuer's first RS256 signing key, as base64 SPKI DER. */
export async function fetchRs256Spki(issuer: string): Promise<string> {
  const { jwks_uri: jwksUri } = await discover(issuer);
  const reply = await fetch(jwksUri);
  const { keys } = (await reply.json()) as {
    keys: (JsonWebKey & { alg?: string; use?: string })[];
  };
  const jwk = keys.find(
    (key) => key.kty === 'RSA' && (key.alg ?? 'RS256') === 'RS256' && key.use !== 'enc',
  );
  if (!jwk) throw new Error(`no RS256 key in the JWKS of ${issuer}`);
  return createPublicKey({ key: jwk, format: 'jwk' })
    .export({ type: 'spki', format: 'der' })
    .toString('base64');
}

// What the benches of new tokens over /verify share (verifier-miss-profile.ts, verifier-syscalls.ts):
// distinct RS256 access tokens of one issuer, a JWKS endpoint serving their key, and a wrk script
// sending each token once, then round again, with the headers NGINX's /_verify sends.
import { generateKeyPairSync, sign, type JsonWebKey } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';

export const BENCH_ISSUER = 'https://bench.issuer.test';
export const BENCH_AUDIENCE = 'secret-gate-api';

/** The public key as the JWKS serves it. */
export type BenchJwk = JsonWebKey & { kid: string; alg: 'RS256'; use: 'sig' };

/**
 * `count` tokens signed by one new RSA-2048 key, each with its own `sub` and `jti`, and `claims`
 * (a DPoP binding's `cnf`, say).
 */
export function mintRs256Tokens(
  count: number,
  claims: Record<string, unknown> = {},
): { tokens: string[]; jwk: BenchJwk } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const b64 = (value: string | Buffer) => Buffer.from(value).toString('base64url');
  const header = b64(JSON.stringify({ alg: 'RS256', kid: 'bench', typ: 'at+jwt' }));
  const now = Math.floor(Date.now() / 1000);
  const tokens = Array.from({ length: count }, (_, i) => {
    const payload = {
      iss: BENCH_ISSUER,
      aud: BENCH_AUDIENCE,
      sub: `user-${i}`,
      azp: 'spa-demo',
      scope: 'openid secrets:read',
      iat: now,
      exp: now + 3600,
      jti: `bench-${i}`,
      ...claims,
    };
    const input = `${header}.${b64(JSON.stringify(payload))}`;
    return `${input}.${b64(sign('sha256', Buffer.from(input), privateKey))}`;
  });
  const jwk: BenchJwk = {
    ...publicKey.export({ format: 'jwk' }),
    kid: 'bench',
    alg: 'RS256',
    use: 'sig',
  };
  return { tokens, jwk };
}

/** Serves `{ keys: [jwk] }` on loopback; resolves with its URI and a close. */
export async function serveJwks(jwk: BenchJwk): Promise<{ uri: string; close: () => void }> {
  const server = createServer((_request, response) =>
    response
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ keys: [jwk] })),
  );
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  return { uri: `http://127.0.0.1:${port}/jwks`, close: () => server.close() };
}

/** Writes `name`.lua (and its token list) into `dir`: each of `list` once, then round again. */
export function verifyScript(dir: string, list: readonly string[], name: string): string {
  writeFileSync(join(dir, `${name}.txt`), `${list.join('\n')}\n`);
  writeFileSync(
    join(dir, `${name}.lua`),
    `local t = {}
for line in io.lines("${join(dir, `${name}.txt`)}") do t[#t + 1] = "Bearer " .. line end
local i = 0
request = function()
  i = i + 1
  if i > #t then i = 1 end
  return wrk.format("GET", "/verify", { ["Authorization"] = t[i], ["X-SG-Policy"] = "default",
    ["X-Original-URI"] = "/secret", ["X-Original-Method"] = "GET", ["X-SG-Client"] = "127.0.0.1" })
end`,
  );
  return join(dir, `${name}.lua`);
}

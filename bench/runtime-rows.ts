// The in-process rows `bench/runtimes.ts` runs under each Node it compares, over the same
// all-distinct RS256 tokens (fixed keys), one JSON line per row on stdout:
//   crypto     bare `crypto.verify` of each token's signature, the key prepared once: the machine's
//              own cost of the math, the floor every other row is read against
//   signature  the verifier's node:crypto JWS check (token/jws-signature.ts)
//   compact    jose's `compactVerify` (WebCrypto), the key imported once
//   jwtVerify  jose's `jwtVerify` with the verifier's claim options
//   authorize  the verifier's whole decision path (`authorize`, no socket), every token new
//   authorizeFirst  the same on the process's first pass, V8 still tiering up (start-up cost)
// Every row is measured on its last of three passes over the same pre-minted tokens.
//   rss        peak RSS after 100,000 distinct decisions are cached (ES256 tokens; the entry does
//              not depend on `alg`), with the deployed heap flags; the process also holds the
//              TypeScript loader and a JWKS server, so `rssBefore` (after the first decision) is
//              printed beside it
// Usage: node --import tsx bench/runtime-rows.ts [timing|rss]
import { createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { compactVerify, importJWK, jwtVerify } from 'jose';
import { loadConfig } from '../verifier/src/config/load.js';
import { createLogger } from '../verifier/src/log.js';
import { createVerifierService } from '../verifier/src/service.js';
import {
  AUDIENCE,
  ISSUER,
  PRIVATE_JWKS,
  publicJwk,
  startJwksServer,
  type KeyName,
} from '../verifier/src/testing/fixtures.js';
import { signatureSchemes, verifySignature } from '../verifier/src/token/jws-signature.js';

/** Tokens measured per row (each measured pass follows a warm-up pass over the same tokens). */
const MEASURED = Number(process.env.BENCH_RUNTIME_TOKENS ?? 10_000);
const RSS_TOKENS = 100_000;

/** A token factory for one key: the `i`-th token, signed on demand. */
export function minter(name: KeyName, alg: 'RS256' | 'ES256'): (i: number) => string {
  const key = createPrivateKey({ key: PRIVATE_JWKS[name] as never, format: 'jwk' });
  const b64 = (value: string | Buffer) => Buffer.from(value).toString('base64url');
  const header = b64(JSON.stringify({ alg, kid: PRIVATE_JWKS[name].kid, typ: 'at+jwt' }));
  const now = Math.floor(Date.now() / 1000);
  const options = alg === 'ES256' ? { key, dsaEncoding: 'ieee-p1363' as const } : key;
  return (i) => {
    const payload = b64(
      JSON.stringify({
        iss: ISSUER,
        aud: AUDIENCE,
        sub: `user-${i}`,
        azp: 'spa-demo',
        scope: 'openid secrets:read',
        iat: now,
        exp: now + 3600,
        jti: `r-${i}`,
      }),
    );
    const input = `${header}.${payload}`;
    return `${input}.${b64(sign('sha256', Buffer.from(input), options))}`;
  };
}

/** How a row checks one token; built anew for each pass (the authorize row: a new service). */
type Call = (token: string) => unknown;

/** Passes over the tokens per row: the last one is measured. */
const PASSES = 3;

/**
 * CPU µs per call over every token on the last of PASSES passes, and on the first: each pass
 * calls a callee built anew (the authorize row: a new service, an empty cache, so every token is
 * new to it). The passes before the last leave V8's tiering done (its compiler threads count in
 * `process.cpuUsage`): a process's first ~16,000 decisions cost up to 1.5× the later ones, a
 * start-up cost the first-pass figure shows beside the per-token one.
 */
async function cpuPerCall(
  tokens: string[],
  build: () => Call | Promise<Call>,
): Promise<{ first: number; last: number }> {
  const passes: number[] = [];
  for (let pass = 0; pass < PASSES; pass++) {
    const call = await build();
    const before = process.cpuUsage();
    for (const token of tokens) await call(token);
    const used = process.cpuUsage(before);
    passes.push((used.user + used.system) / tokens.length);
  }
  return { first: passes[0]!, last: passes.at(-1)! };
}

/** The verifier's service, in-process, on one fixed key; `allow` throws on anything but an allow. */
export async function createService(kid: KeyName) {
  const jwks = await startJwksServer([kid]);
  const config = loadConfig({
    VERIFIER_ISSUER: ISSUER,
    VERIFIER_AUDIENCE: AUDIENCE,
    VERIFIER_JWKS_URI: jwks.url,
    VERIFIER_REQUIRED_SCOPES: 'secrets:read',
  });
  const service = createVerifierService(config, {
    logger: createLogger('warn'),
    defaultMetrics: false,
  });
  await service.start();
  const allow = async (token: string) => {
    const decision = await service.authorize({ authorization: `Bearer ${token}` });
    if (decision.outcome !== 'allow') throw new Error(`denied: ${decision.reason}`);
  };
  return {
    allow,
    /** The decision itself, no wrapper (perf/verifier-counts.ts counts its promises). */
    authorize: (token: string) => service.authorize({ authorization: `Bearer ${token}` }),
    /** The decision of a request built beforehand (the timing row's). */
    decide: service.authorize,
    close: () => Promise.all([service.stop(0), jwks.close()]),
  };
}

function row(name: string, measured: number | { readonly last: number }): void {
  const value = typeof measured === 'number' ? measured : measured.last;
  process.stdout.write(`${JSON.stringify({ row: name, value: Number(value.toFixed(1)) })}\n`);
}

async function timingRows(): Promise<void> {
  const mint = minter('rsaA', 'RS256');
  const tokens = Array.from({ length: MEASURED }, (_, i) => mint(i));
  const keyObject = createPublicKey({ key: publicJwk('rsaA') as never, format: 'jwk' });
  const cryptoKey = await importJWK(publicJwk('rsaA'), 'RS256');
  const scheme = signatureSchemes(['RS256']).get('RS256')!;
  const split = (token: string) => {
    const dot = token.lastIndexOf('.');
    return [Buffer.from(token.slice(0, dot)), Buffer.from(token.slice(dot + 1), 'base64url')];
  };
  const parts = tokens.map(split);
  row(
    'crypto',
    await cpuPerCall(tokens, () => {
      let i = 0;
      return () => {
        const [input, signature] = parts[i++]!;
        if (!verify('sha256', input!, keyObject, signature!)) throw new Error('bad signature');
      };
    }),
  );
  row(
    'signature',
    await cpuPerCall(tokens, () => (token) => {
      if (!verifySignature(token, scheme, keyObject)) throw new Error('bad signature');
    }),
  );
  row(
    'compact',
    await cpuPerCall(
      tokens,
      () => (token) => compactVerify(token, cryptoKey, { algorithms: ['RS256'] }),
    ),
  );
  const options = { issuer: ISSUER, audience: AUDIENCE, algorithms: ['RS256'] };
  row('jwtVerify', await cpuPerCall(tokens, () => (token) => jwtVerify(token, cryptoKey, options)));
  // Each pass on a service of its own (the one before closed): every token is new to its cache.
  // Each request as uWS hands it over, one flat header string, built before the clock starts: a
  // `Bearer ${token}` made per call was the bench's own work (and a flattened copy per token).
  const requests = tokens.map((token) => ({
    authorization: Buffer.from(`Bearer ${token}`, 'latin1').toString('latin1'),
  }));
  let service: Awaited<ReturnType<typeof createService>> | undefined;
  const authorize = await cpuPerCall(tokens, async () => {
    await service?.close();
    service = await createService('rsaA');
    const { decide } = service;
    let i = 0;
    return async () => {
      const decision = await decide(requests[i++]!);
      if (decision.outcome !== 'allow') throw new Error(`denied: ${decision.reason}`);
    };
  });
  await service?.close();
  row('authorize', authorize);
  row('authorizeFirst', authorize.first);
}

/** Tokens are minted one at a time and dropped, so the peak is the cache's, not the fixtures'. */
async function rssRow(): Promise<void> {
  const mint = minter('ec', 'ES256');
  const service = await createService('ec');
  await service.allow(mint(-1));
  const before = process.resourceUsage().maxRSS / 1024;
  for (let i = 0; i < RSS_TOKENS; i++) await service.allow(mint(i));
  row('rss', process.resourceUsage().maxRSS / 1024);
  row('rssBefore', before);
  await service.close();
}

if (process.argv[1] === fileURLToPath(import.meta.url))
  await (process.argv[2] === 'rss' ? rssRow() : timingRows());

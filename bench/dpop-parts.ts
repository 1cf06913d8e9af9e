// The DPoP step's cost, part by part, in-process and in one run: each row is CPU µs per proof over
// the same distinct ES256 proofs (one client key, a bound token), so the rows are read against the
// first, the bare verify:
//   verify     bare `crypto.verify` of each proof's signature, the key prepared once (the floor)
//   signature  the verifier's JWS check of the proof (token/jws-signature.ts)
//   claims     the proof's claims decoded and checked as jose does (token/jwt-claims.ts)
//   ath        the `ath` digest: SHA-256 of the access token
//   replay     the replay key's digest and the in-process replay store's `remember`
//   proof      the whole proof check (dpop/proof.ts), its header already known
//   step       the whole DPoP step (dpop/index.ts: htu, proof, replay store), as authorize runs it
// Usage: npm run bench:dpop-parts [-- proofs] — prints a markdown table.
import { createPrivateKey, createPublicKey, hash, sign, verify, type KeyObject } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createDpopRuntime } from '../verifier/src/dpop/index.js';
import { createProofChecker } from '../verifier/src/dpop/proof.js';
import { createMemoryReplayStore } from '../verifier/src/dpop/replay-store.js';
import { createLogger } from '../verifier/src/log.js';
import { proofJwk, thumbprintOf } from '../verifier/src/testing/dpop-proof.js';
import { PRIVATE_JWKS } from '../verifier/src/testing/fixtures.js';
import { validateClaims } from '../verifier/src/token/jwt-claims.js';
import { signatureSchemes, verifySignature } from '../verifier/src/token/jws-signature.js';

const ORIGIN = 'https://gate.example';
const PATH = '/secret';
const HTU = `${ORIGIN}${PATH}`;
/** An access token of a realistic length (its content does not matter to the proof's checks). */
const ACCESS_TOKEN = `${'a'.repeat(120)}.${'b'.repeat(600)}.${'c'.repeat(342)}`;

/** Pools minted so far: each pool's `jti`s are its own. */
let pools = 0;

/**
 * `count` distinct proofs (their own `jti`) by the fixed `ec` key, signed with node:crypto, for
 * `accessToken` at `htu` (GET).
 */
export function mintProofs(
  count: number,
  now: number,
  accessToken = ACCESS_TOKEN,
  htu = HTU,
): string[] {
  const privateKey = {
    key: createPrivateKey({ key: PRIVATE_JWKS.ec as never, format: 'jwk' }),
    dsaEncoding: 'ieee-p1363' as const,
  };
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const header = b64({ alg: 'ES256', typ: 'dpop+jwt', jwk: proofJwk('ec') });
  const ath = hash('sha256', accessToken, 'base64url');
  // Unique across calls too: a server fed several pools must never see a `jti` twice.
  const run = `${now}-${++pools}`;
  return Array.from({ length: count }, (_, i) => {
    const input = `${header}.${b64({ jti: `p-${run}-${i}`, htm: 'GET', htu, iat: now, ath })}`;
    return `${input}.${sign('sha256', Buffer.from(input), privateKey).toString('base64url')}`;
  });
}

/**
 * Writes a wrk script into `dir` giving each request the next of `proofs` in its `DPoP` header,
 * beside the headers given with `-H`; the path to it. A proof sent twice is a replay the verifier
 * refuses: give more proofs than the run can send.
 */
export function proofWrkScript(dir: string, proofs: readonly string[]): string {
  const list = join(dir, 'proofs.txt');
  writeFileSync(list, `${proofs.join('\n')}\n`);
  const script = join(dir, 'proofs.lua');
  writeFileSync(
    script,
    `local proofs = {}
for line in io.lines("${list}") do proofs[#proofs + 1] = line end
local i = 0
local headers
request = function()
  -- wrk.format's headers replace the -H ones: copied once, the proof set per request.
  if headers == nil then
    headers = {}
    for name, value in pairs(wrk.headers) do headers[name] = value end
  end
  i = i + 1
  if i > #proofs then i = 1 end
  headers["DPoP"] = proofs[i]
  return wrk.format(nil, nil, headers)
end
`,
  );
  return script;
}

/** CPU µs per call over the second half of `items` (the first half warms up). */
async function cpuPerCall<T>(items: T[], call: (item: T) => unknown): Promise<number> {
  const half = items.length >> 1;
  for (let i = 0; i < half; i++) await call(items[i]!);
  const before = process.cpuUsage();
  for (let i = half; i < items.length; i++) await call(items[i]!);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / (items.length - half);
}

/**
 * CPU µs per proof of the bare `crypto.verify` of `proofs` (the fixed `ec` key, prepared once):
 * the floor the DPoP step is read against, here and in bench:cached-verify's `--dpop` row.
 */
export function bareVerifyMicros(proofs: string[]): Promise<number> {
  const publicKey: KeyObject = createPublicKey({ key: proofJwk('ec') as never, format: 'jwk' });
  const parts = proofs.map((proof) => {
    const dot = proof.lastIndexOf('.');
    return [Buffer.from(proof.slice(0, dot)), Buffer.from(proof.slice(dot + 1), 'base64url')];
  });
  return cpuPerCall(parts, ([input, signature]) => {
    if (!verify('sha256', input!, { key: publicKey, dsaEncoding: 'ieee-p1363' }, signature!))
      throw new Error('a proof did not pass');
  });
}

export async function dpopPartsTable(count = 8_000): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const clock = () => now;
  const proofs = mintProofs(count, now);
  const jkt = await thumbprintOf('ec');
  const publicKey: KeyObject = createPublicKey({ key: proofJwk('ec') as never, format: 'jwk' });
  const scheme = signatureSchemes(['ES256']).get('ES256')!;
  const header = { alg: 'ES256', typ: 'dpop+jwt' };
  const fail = () => {
    throw new Error('a proof did not pass');
  };
  const rows: Array<[string, number]> = [];
  let i = 0;
  rows.push(['bare `crypto.verify` ES256 (the floor)', await bareVerifyMicros(proofs)]);
  rows.push([
    "the verifier's JWS check",
    await cpuPerCall(proofs, (proof) => verifySignature(proof, scheme, publicKey) || fail()),
  ]);
  rows.push([
    'claims decoded and checked',
    await cpuPerCall(proofs, (proof) => validateClaims(proof, header, header, now)),
  ]);
  rows.push([
    '`ath`: SHA-256 of the access token',
    await cpuPerCall(proofs, () => hash('sha256', ACCESS_TOKEN, 'base64url')),
  ]);
  const store = createMemoryReplayStore({ maxEntries: 1_000_000, now: clock });
  rows.push([
    'replay: key digest and in-process `remember`',
    await cpuPerCall(proofs, () =>
      store.remember(hash('sha256', `${jkt}\u0000p-${i++}`, 'base64url'), 120),
    ),
  ]);
  const checkProof = createProofChecker({ algorithms: ['ES256'], iatWindow: 60, now: clock });
  const expect = { htm: 'GET', htu: HTU, accessToken: ACCESS_TOKEN, jkt };
  rows.push([
    'the whole proof check (header known)',
    await cpuPerCall(proofs, (proof) => checkProof(proof, expect)),
  ]);
  const runtime = createDpopRuntime(
    { algorithms: ['ES256'], iatWindow: 60, replayMaxEntries: 1_000_000 },
    { now: clock, logger: createLogger('warn'), redis: {} as never },
  );
  const credentials = { scheme: 'dpop' as const, token: ACCESS_TOKEN };
  const request = { originalOrigin: ORIGIN, originalUri: PATH, originalMethod: 'GET' };
  rows.push([
    'the whole DPoP step (htu, proof, replay store)',
    await cpuPerCall(proofs, (dpop) =>
      runtime.check('required', credentials, { ...request, dpop }, jkt),
    ),
  ]);
  await runtime.close();
  const floor = rows[0]![1];
  return [
    `| CPU µs per proof, in-process, Node ${process.versions.node} | µs | over the bare verify |`,
    '| --- | ---: | ---: |',
    ...rows.map(
      ([label, value]) => `| ${label} | ${value.toFixed(1)} | ${(value - floor).toFixed(1)} |`,
    ),
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url))
  console.log(await dpopPartsTable(Number(process.argv[2] ?? 8_000)));

// In-process comparison of the distinct-token path with jose's own loop, for profiling:
//   node --cpu-prof --import tsx bench/verifier-profile.ts [verifier|jose] [seconds]
// The verifier mode calls `authorize` (the code /verify runs, minus the socket) over all-distinct
// RS256 tokens, one at a time as a single connection would; the jose mode runs jwtVerify on the
// same tokens with the same options. Prints verifications/s and CPU µs per verification.
import { importJWK, jwtVerify } from 'jose';
import { AUDIENCE, ISSUER, publicJwk } from '../verifier/src/testing/fixtures.js';
import { createService, minter } from './runtime-rows.js';

const mode = process.argv[2] ?? 'verifier';
const seconds = Number(process.argv[3] ?? 5);
const COUNT = Number(process.env.PROFILE_TOKENS ?? 20_000);

/** `count` distinct RS256 tokens of the fixed key (bench/runtime-rows.ts mints them). */
function mint(count: number): string[] {
  const next = minter('rsaA', 'RS256');
  return Array.from({ length: count }, (_, i) => next(i));
}

async function loop(verify: (token: string) => Promise<unknown>, tokens: string[]): Promise<void> {
  for (let i = 0; i < 2000; i++) await verify(tokens[i]!);
  const started = performance.now();
  const cpu = process.cpuUsage();
  let done = 2000;
  while (performance.now() - started < seconds * 1000 && done < tokens.length) {
    await verify(tokens[done]!);
    done++;
  }
  const used = process.cpuUsage(cpu);
  const n = done - 2000;
  const rate = n / ((performance.now() - started) / 1000);
  console.log(
    `${mode}: ${rate.toFixed(0)}/s, ${((used.user + used.system) / n).toFixed(1)} µs CPU each (${n} tokens)`,
  );
}

const tokens = mint(COUNT);
if (mode === 'jose') {
  const key = await importJWK(publicJwk('rsaA'), 'RS256');
  const options = { issuer: ISSUER, audience: AUDIENCE, algorithms: ['RS256'] };
  await loop((token) => jwtVerify(token, key, options), tokens);
} else {
  const service = await createService('rsaA');
  await loop(service.allow, tokens);
  await service.close();
}

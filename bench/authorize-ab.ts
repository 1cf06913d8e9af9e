// `authorize()` of new RS256 tokens, this tree against another build of it (a parent commit's
// tree), in one process: each warmed on its own tokens, then 1,000-token batches of the other
// tree, this one and a bare `crypto.verify` alternate for several rounds, so all three share every
// minute of a noisy machine's load. Prints each one's median CPU µs per token and its ratio to the
// bare verify. Run with the deployed heap flags:
//   git archive <commit> | tar -x -C DIR && ln -s "$PWD/node_modules" DIR/node_modules
//   node --max-semi-space-size=1 --max-old-space-size=96 --import tsx bench/authorize-ab.ts DIR
import { createPublicKey, verify } from 'node:crypto';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { publicJwk } from '../verifier/src/testing/fixtures.js';
import type { VerifyRequest } from '../verifier/src/decision/decision.js';
import * as here from './runtime-rows.js';

const other = process.argv[2];
if (other === undefined) throw new TypeError('usage: authorize-ab.ts <other tree>');
const there = (await import(join(resolve(other), 'bench', 'runtime-rows.ts'))) as typeof here;
const BATCH = 1_000;
const ROUNDS = Number(process.env.BENCH_AB_ROUNDS ?? 8);
const WARM = 4_000;

const next = here.minter('rsaA', 'RS256');
const tokens = Array.from({ length: WARM * 2 + BATCH * ROUNDS * 3 }, (_, i) => next(i));
let used = 0;
/** The next `n` unused tokens: every measured token is new to both caches. */
const take = (n: number) => tokens.slice(used, (used += n));
// Each Authorization one flat string, as uWS hands it over.
const request = (token: string): VerifyRequest => ({
  authorization: `Bearer ${token}`.split('').join(''),
});
const cpu = (start: NodeJS.CpuUsage, n: number) => {
  const { user, system } = process.cpuUsage(start);
  return (user + system) / n;
};

async function decideAll(decide: (request: VerifyRequest) => unknown, n: number) {
  const requests = take(n).map(request);
  const start = process.cpuUsage();
  for (const one of requests) {
    // A decision made synchronously is not awaited: no microtask the verifier does not make.
    const decision = decide(one);
    if (decision instanceof Promise) await decision;
  }
  return cpu(start, n);
}

const key = createPublicKey({ key: publicJwk('rsaA') as never, format: 'jwk' });
function bareAll(n: number) {
  const parts = take(n).map((token) => {
    const cut = token.lastIndexOf('.');
    return [Buffer.from(token.slice(0, cut)), Buffer.from(token.slice(cut + 1), 'base64url')];
  });
  const start = process.cpuUsage();
  for (const [input, signature] of parts)
    if (!verify('sha256', input!, key, signature!)) throw new Error('a bench token did not verify');
  return cpu(start, n);
}

const services = {
  other: await there.createService('rsaA'),
  here: await here.createService('rsaA'),
};
await decideAll(services.other.decide, WARM);
await decideAll(services.here.decide, WARM);
const figures = { other: [] as number[], here: [] as number[], bare: [] as number[] };
for (let round = 0; round < ROUNDS; round++) {
  const order =
    round % 2 === 0 ? (['other', 'bare', 'here'] as const) : (['here', 'other', 'bare'] as const);
  for (const which of order)
    figures[which].push(
      which === 'bare' ? bareAll(BATCH) : await decideAll(services[which].decide, BATCH),
    );
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const bare = median(figures.bare);
const line = (name: string, value: number) =>
  `${name} ${value.toFixed(1)} µs (${(value / bare).toFixed(2)}× the bare verify)`;
console.log(
  `Node ${process.versions.node}, load ${loadavg()[0]!.toFixed(1)}, medians of ${ROUNDS} rounds: ` +
    `bare crypto.verify ${bare.toFixed(1)} µs; ${line('other tree', median(figures.other))}; ` +
    `${line('this tree', median(figures.here))}`,
);
await Promise.all([services.other.close(), services.here.close()]);

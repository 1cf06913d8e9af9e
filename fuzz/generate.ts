// Grows the committed corpus (fuzz/corpus/*.json) with fast-check: valid tokens, proofs and
// event tokens of the fixed test keys, mutated one to three times (a header or claim replaced by
// any JSON value, a segment replaced by junk, characters inserted, deleted or repeated, dots added
// or removed, the whole input repeated past the size caps), and half of them signed again by the
// seed's key so the checks after the signature (claims, events, binding) are reached too. An input is kept when it reaches an
// outcome (accepted, a refusal code, a crash) not yet held for its target and its first
// mutation's kind: a cheap stand-in for coverage feedback. Any crash is printed and exits 1.
//
//   npx tsx fuzz/generate.ts [--runs 20000] [--seed N]
import { createPrivateKey, sign } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import fc from 'fast-check';
import { signProof } from '../verifier/src/testing/dpop-proof.js';
import { mintLogoutToken, mintSet } from '../verifier/src/testing/event-tokens.js';
import { buildAttackTokens, createAttackerKey } from '../test/attacks/tokens.js';
import {
  AUDIENCE,
  ISSUER,
  mintToken,
  PRIVATE_JWKS,
  publicJwk,
  type KeyName,
} from '../verifier/src/testing/fixtures.js';
import { corpusFile, readCorpus, type CorpusEntry } from './corpus.js';
import { createTargets, HTU, NOW, PROOF_ACCESS_TOKEN, type TargetName } from './targets.js';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '20000' }, seed: { type: 'string' } },
});
const runs = Number(values.runs);
const seed = values.seed === undefined ? Date.now() % 2 ** 31 : Number(values.seed);

/**
 * The attack suite's hostile tokens (test/attacks/tokens.ts), built against the fixed test keys
 * with the clock frozen at NOW: seeds of the JWS target and corpus entries of their own.
 */
async function attackTokens(): Promise<string[]> {
  const realNow = Date.now;
  Date.now = () => NOW * 1000;
  try {
    const rows = await buildAttackTokens(
      {
        issuer: ISSUER,
        audience: AUDIENCE,
        jwks: { keys: [publicJwk('rsaA'), publicJwk('ec')] },
        valid: await mintToken({ now: NOW }),
        // The attack table removes a member with null, mintToken with undefined.
        mint: ({ claims, header }) =>
          mintToken({
            now: NOW,
            claims: Object.fromEntries(
              Object.entries(claims ?? {}).map(([k, v]) => [k, v ?? undefined]),
            ),
            header: Object.fromEntries(Object.entries(header ?? {}).filter(([, v]) => v !== null)),
          }),
        attackerJwksUrl: 'https://evil.test/jwks',
        strictTyp: true,
      },
      createAttackerKey(),
    );
    // The token after the scheme; rows about the header's own syntax keep what follows it.
    return rows.map(({ authorization }) => authorization.replace(/^\S+\s+/, ''));
  } finally {
    Date.now = realNow;
  }
}

const ATTACKS = await attackTokens();
const SEEDS: Record<TargetName, string[]> = {
  jws: [await mintToken({ now: NOW }), await mintToken({ key: 'ec', now: NOW }), ...ATTACKS],
  dpop: [
    await signProof({ htu: HTU, iat: NOW, accessToken: PROOF_ACCESS_TOKEN }),
    await signProof({ key: 'ecB', htu: HTU, iat: NOW, accessToken: PROOF_ACCESS_TOKEN }),
  ],
  event: [await mintLogoutToken({ now: NOW }), await mintSet(ISSUER, { now: NOW })],
};

/**
 * The key that signed each valid seed (the first two of each target): a mutated input may be
 * signed again, to reach the claim checks; an attack-suite seed is signed again by the first.
 */
const SIGNED_BY: Record<TargetName, [KeyName, KeyName]> = {
  jws: ['rsaA', 'ec'],
  dpop: ['ec', 'ecB'],
  event: ['rsaA', 'rsaB'],
};

/** `header.payload` of `input` signed again by `key` (RS256 or ES256, as the key is). */
function signAgain(input: string, key: KeyName): string {
  const dot = input.lastIndexOf('.');
  if (dot < 0) return input;
  const signingInput = Buffer.from(input.slice(0, dot));
  const privateKey = createPrivateKey({ key: PRIVATE_JWKS[key] as never, format: 'jwk' });
  const signature =
    PRIVATE_JWKS[key].kty === 'EC'
      ? sign('sha256', signingInput, { key: privateKey, dsaEncoding: 'ieee-p1363' })
      : sign('sha256', signingInput, privateKey);
  return `${input.slice(0, dot)}.${signature.toString('base64url')}`;
}

/** Names the JOSE and claim parsers look at, and a few that trip naive object handling. */
const MEMBERS = [
  ...['alg', 'typ', 'kid', 'crit', 'jwk', 'b64', 'jku', 'x5c', 'cty', 'zip', 'enc'],
  ...['iss', 'aud', 'exp', 'nbf', 'iat', 'jti', 'sub', 'sid', 'events', 'cnf', 'scope'],
  ...['htm', 'htu', 'ath', 'nonce', 'sub_id', 'client_id', 'azp'],
  ...['__proto__', 'constructor', 'toString'],
];

const b64 = (text: string) => Buffer.from(text).toString('base64url');
/** The JSON object a segment holds, or a fresh one when it holds none. */
const json = (segment: string): Record<string, unknown> => {
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
};

type Mutation = { kind: string; apply: (input: string) => string };

const member = fc.record({
  part: fc.constantFrom(0, 1),
  name: fc.constantFrom(...MEMBERS),
  value: fc.option(fc.jsonValue({ maxDepth: 3 }), { nil: undefined, freq: 4 }),
});
const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  member.map(({ part, name, value }) => ({
    kind: `member:${part === 0 ? 'header' : 'claims'}`,
    apply: (input: string) => {
      const segments = input.split('.');
      const object = json(segments[part] ?? '');
      if (value === undefined) delete object[name];
      else Object.defineProperty(object, name, { value, enumerable: true, configurable: true });
      segments[part] = b64(JSON.stringify(object));
      return segments.join('.');
    },
  })),
  fc
    .record({
      part: fc.nat(3),
      junk: fc.oneof(
        fc.string({ maxLength: 40 }),
        fc.string({ unit: 'binary', maxLength: 40 }).map(b64),
        fc.jsonValue({ maxDepth: 2 }).map((value) => b64(JSON.stringify(value))),
        fc.uint8Array({ maxLength: 600 }).map((bytes) => Buffer.from(bytes).toString('base64url')),
      ),
    })
    .map(({ part, junk }) => ({
      kind: 'segment',
      apply: (input: string) => {
        const segments = input.split('.');
        segments[part % Math.max(segments.length, 1)] = junk;
        return segments.join('.');
      },
    })),
  fc
    .record({ at: fc.nat(), text: fc.string({ unit: 'binary', maxLength: 8 }) })
    .map(({ at, text }) => ({
      kind: 'insert',
      apply: (input: string) => {
        const i = at % (input.length + 1);
        return input.slice(0, i) + text + input.slice(i);
      },
    })),
  fc.record({ at: fc.nat(), length: fc.integer({ min: 1, max: 40 }) }).map(({ at, length }) => ({
    kind: 'delete',
    apply: (input: string) => {
      const i = at % (input.length + 1);
      return input.slice(0, i) + input.slice(i + length);
    },
  })),
  fc.constantFrom('..', '.', '....', '').map((dots) => ({
    kind: 'dots',
    apply: (input: string) => (dots === '' ? input.replaceAll('.', '') : input.replace('.', dots)),
  })),
  fc.integer({ min: 2, max: 12 }).map((times) => ({
    kind: 'repeat',
    apply: (input: string) => input.repeat(times),
  })),
);

const fuzzCase = fc.record({
  target: fc.constantFrom<TargetName>('jws', 'dpop', 'event'),
  seedIndex: fc.nat(),
  mutations: fc.array(mutation, { minLength: 1, maxLength: 3 }),
  signAgain: fc.boolean(),
});

const targets = createTargets();
const corpus = new Map<TargetName, CorpusEntry[]>(
  (['jws', 'dpop', 'event'] as const).map((name) => [name, readCorpus(name)]),
);
const held = new Map<string, number>();
const classOf = (target: TargetName, kind: string, outcome: string) =>
  `${target} ${kind} ${outcome}`;
for (const [name, entries] of corpus)
  for (const entry of entries) {
    const family = entry.kind.split('+')[0]! + (entry.kind.endsWith('+signed') ? '+signed' : '');
    const key = classOf(name, family, entry.outcome);
    held.set(key, (held.get(key) ?? 0) + 1);
  }
// The valid seeds and the attack suite's tokens are entries too (once: a valid ES256 seed differs
// on every run): a replay must decide them alike.
for (const [name, seeds] of Object.entries(SEEDS) as [TargetName, string[]][]) {
  const entries = corpus.get(name)!;
  for (const kind of ['seed', 'attack']) {
    if (entries.some((entry) => entry.kind === kind)) continue;
    const inputs = kind === 'seed' ? seeds.slice(0, 2) : seeds.slice(2);
    for (const input of inputs) entries.push({ kind, outcome: await targets[name](input), input });
  }
}

const crashes: string[] = [];
let added = 0;
await fc.assert(
  fc.asyncProperty(fuzzCase, async ({ target, seedIndex, mutations, signAgain: again }) => {
    const seeds = SEEDS[target];
    const index = seedIndex % seeds.length;
    const mutated = mutations.reduce((text, m) => m.apply(text), seeds[index]!);
    const input = again ? signAgain(mutated, SIGNED_BY[target][Math.min(index, 1)]!) : mutated;
    const outcome = await targets[target](input);
    // The class is the first mutation's kind: combinations would hold thousands of near-twins.
    const kind = [...mutations.map((m) => m.kind), ...(again ? ['signed'] : [])].join('+');
    const family = `${mutations[0]!.kind}${again ? '+signed' : ''}`;
    if (outcome.startsWith('crash:'))
      crashes.push(`${target} ${outcome}: ${JSON.stringify(input)}`);
    const key = classOf(target, family, outcome);
    const count = held.get(key) ?? 0;
    // Just past the 8 KiB caps is long enough to reach them; longer inputs only fill the repo.
    if (count === 0 && input.length <= 9_000) {
      held.set(key, count + 1);
      corpus.get(target)!.push({ kind, outcome, input });
      added += 1;
    }
    return true;
  }),
  { numRuns: runs, seed },
);

for (const [name, entries] of corpus)
  writeFileSync(corpusFile(name), `${JSON.stringify(entries, null, 1)}\n`);
console.log(
  `${runs} inputs (seed ${seed}): ${added} added; corpus ${[...corpus].map(([name, entries]) => `${name} ${entries.length}`).join(', ')}; ${crashes.length} crashes`,
);
for (const crash of crashes.slice(0, 20)) console.log(`CRASH ${crash}`);
process.exitCode = crashes.length === 0 ? 0 : 1;

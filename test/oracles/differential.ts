// The differential run: generated cases (cases.ts) through the gate and both oracles (oracles.ts);
// every difference either falls under a documented known difference (known-differences.ts) or is
// a disagreement, kept with its case for the report.
import fc from 'fast-check';
import { buildCase, caseArbitrary, NOW, type CaseSpec } from './cases.js';
import { explainDifference } from './known-differences.js';
import { startDeciders } from './oracles.js';

export const ORACLES = ['jose', 'oauth4webapi'] as const;
export type Oracle = (typeof ORACLES)[number];

export interface Disagreement {
  readonly oracle: Oracle;
  readonly gate: boolean;
  readonly oracleAllowed: boolean;
  readonly mutations: readonly string[];
  readonly spec: CaseSpec;
}

export interface Summary {
  readonly seed: number;
  cases: number;
  /** Cases the gate allowed: the generator must reach both outcomes. */
  allowed: number;
  dpopCases: number;
  readonly agreed: Record<Oracle, number>;
  /** Known differences by oracle and name: how many cases each explained. */
  readonly known: Record<Oracle, Record<string, number>>;
  /** The first 50 disagreements, and how many there were. */
  readonly disagreements: Disagreement[];
  disagreementCount: number;
}

/** The fields of `spec` that differ from a plain valid request, as `path=value` strings. */
export function mutationsOf(spec: CaseSpec): string[] {
  const ok: Record<string, unknown> = {
    'token.signer': 'ES256',
    'token.alg': 'same',
    'token.kid': 'same',
    'token.typ': 'at+jwt',
    'token.crit': undefined,
    'token.extraHeader': 'none',
    'token.iss': 'https://idp.test',
    'token.aud': 'secret-gate-api',
    'token.exp': 300,
    'token.nbf': undefined,
    'token.iat': 0,
    'token.sub': 'user-1',
    'token.jti': 'at-1',
    'token.clientId': 'client_id',
    'token.scope': 'openid secrets:read',
    'token.refusedClaim': 'none',
    'token.cnf': 'auto',
    'token.scheme': 'auto',
    'token.segments': 'none',
    'proof.key': 'ES256',
    'proof.alg': 'same',
    'proof.typ': 'dpop+jwt',
    'proof.jwk': 'public',
    'proof.crit': undefined,
    'proof.htm': 'same',
    'proof.htu': 'same',
    'proof.iat': 0,
    'proof.exp': undefined,
    'proof.nbf': undefined,
    'proof.ath': 'same',
    'proof.jti': 'unique',
    'proof.segments': 'none',
  };
  const found: string[] = [];
  for (const [path, expected] of Object.entries(ok)) {
    const [part, field] = path.split('.') as ['token' | 'proof', string];
    const holder = spec[part] as Record<string, unknown> | null;
    if (holder === null) continue;
    let value = holder[field];
    if (field === 'segments') value = (value as { mutation: string }).mutation;
    if (JSON.stringify(value) !== JSON.stringify(expected))
      found.push(`${path}=${JSON.stringify(value) ?? 'absent'}`);
  }
  if (spec.dpopHeaderWithoutProof && spec.proof === null) found.push('dpopHeaderWithoutProof');
  return found;
}

/**
 * Runs `cases` generated requests (fast-check, `seed`) through the gate and both oracles. The
 * clock of all three is frozen at NOW (Date.now included, which oauth4webapi reads) for the run.
 */
export async function runDifferential(options: {
  cases: number;
  seed: number;
  onProgress?: (done: number, disagreements: number) => void;
}): Promise<Summary> {
  const realNow = Date.now;
  Date.now = () => NOW * 1000;
  const deciders = await startDeciders();
  const summary: Summary = {
    seed: options.seed,
    cases: 0,
    allowed: 0,
    dpopCases: 0,
    agreed: { jose: 0, oauth4webapi: 0 },
    known: { jose: {}, oauth4webapi: {} },
    disagreements: [],
    disagreementCount: 0,
  };
  try {
    await fc.assert(
      fc.asyncProperty(caseArbitrary, async (spec) => {
        const built = buildCase(spec, deciders.thumbprints);
        const gate = await deciders.gate(built.request);
        summary.cases += 1;
        if (gate) summary.allowed += 1;
        if (spec.proof !== null) summary.dpopCases += 1;
        for (const oracle of ORACLES) {
          const allowed = await deciders[oracle](built.request);
          if (allowed === gate) {
            summary.agreed[oracle] += 1;
            continue;
          }
          const known = explainDifference(oracle, { spec, built, gate, oracleAllowed: allowed });
          if (known !== undefined) {
            summary.known[oracle][known] = (summary.known[oracle][known] ?? 0) + 1;
            continue;
          }
          summary.disagreementCount += 1;
          if (summary.disagreements.length < 50)
            summary.disagreements.push({
              oracle,
              gate,
              oracleAllowed: allowed,
              mutations: mutationsOf(spec),
              spec,
            });
        }
        if (summary.cases % 10_000 === 0)
          options.onProgress?.(summary.cases, summary.disagreementCount);
        return true;
      }),
      { numRuns: options.cases, seed: options.seed, endOnFailure: true },
    );
  } finally {
    await deciders.close();
    Date.now = realNow;
  }
  return summary;
}

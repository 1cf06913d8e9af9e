// Where the gate and an oracle are known to decide differently, each named and recognised by a
// rule on the generated case and the direction of the difference. docs/SECURITY.md ("Three
// oracles") lists them with their reasons. A difference that no rule explains is a disagreement.
import { TOLERANCE, type Built, type CaseSpec } from './cases.js';

export interface Difference {
  readonly spec: CaseSpec;
  readonly built: Built;
  readonly gate: boolean;
  readonly oracleAllowed: boolean;
}

interface Known {
  readonly name: string;
  readonly oracles: readonly ('jose' | 'oauth4webapi')[];
  /** The gate's decision in this difference (the oracle's is the other). */
  readonly gate: boolean;
  readonly applies: (difference: Difference) => boolean;
}

const BOTH = ['jose', 'oauth4webapi'] as const;
const num = (value: unknown): value is number => typeof value === 'number';
const segmentsOf = ({ spec }: Difference) => [
  spec.token.segments.mutation,
  spec.proof?.segments.mutation,
];

/** The gate's rules beyond both oracles (refusals) and the oracles' beyond the gate's. */
export const KNOWN_DIFFERENCES: readonly Known[] = [
  {
    // jwt-verifier.ts: `exp` at most `maxTokenAge` (24 h by default) ahead, against a key leak
    // outliving every rotation. Neither oracle caps a lifetime.
    name: 'token lifetime beyond maxTokenAge',
    oracles: BOTH,
    gate: false,
    applies: ({ spec }) => spec.token.exp === 'farFuture',
  },
  {
    // presets.ts ALWAYS_REFUSED: `nonce`, `at_hash`, `events` mark ID and logout tokens.
    name: 'ID/logout token claims (nonce, events) refused',
    oracles: BOTH,
    gate: false,
    applies: ({ spec }) => spec.token.refusedClaim !== 'none',
  },
  {
    // The reference test's rule too: `iat` later than now + tolerance is refused by the gate.
    name: '"iat" in the future',
    oracles: BOTH,
    gate: false,
    applies: ({ spec }) => num(spec.token.iat) && spec.token.iat > TOLERANCE,
  },
  {
    // verified-token.ts readJkt: a `cnf` other than a DPoP `jkt` binding is refused, never read
    // as unbound. jose has no notion of `cnf`; oauth4webapi takes `{}` as no binding.
    name: '"cnf" that is no DPoP "jkt" binding',
    oracles: BOTH,
    gate: false,
    applies: ({ spec }) => ['empty', 'x5t', 'string'].includes(spec.token.cnf),
  },
  {
    // proof.ts: `jti` non-empty and at most 256 characters (it is a replay-store key).
    name: 'proof "jti" empty or over 256 characters',
    oracles: BOTH,
    gate: false,
    applies: ({ spec }) => spec.proof !== null && ['empty', 'long'].includes(spec.proof.jti),
  },
  {
    // Issue 38 item 4: a signature whose base64url has non-zero unused low bits is one of 4 or 16
    // spellings of the same bytes. jose and oauth4webapi decode it; the gate refuses it once that
    // item lands (until then all three accept it).
    name: 'non-canonical base64url signature',
    oracles: BOTH,
    gate: false,
    applies: (difference) => segmentsOf(difference).includes('nonCanonicalSignature'),
  },
  {
    // identity.ts: a token must name its client (`client_id` or `azp`, a printable string) so the
    // secret set and the log know it. jose checks no client claim.
    name: 'no usable client claim',
    oracles: ['jose'],
    gate: false,
    applies: ({ spec }) => ['missing', 'number'].includes(spec.token.clientId),
  },
  {
    // RFC 9068 §2.2 makes `sub`, `jti`, `client_id` and `iat` REQUIRED; oauth4webapi enforces
    // them (as strings), the gate asks only what it uses (a client claim, `azp` accepted).
    name: 'RFC 9068 required claims (sub, jti, client_id, iat) missing or not strings',
    oracles: ['oauth4webapi'],
    gate: true,
    applies: ({ spec: { token } }) =>
      typeof token.sub !== 'string' ||
      typeof token.jti !== 'string' ||
      token.clientId !== 'client_id' ||
      token.iat === undefined,
  },
  {
    // oauth4webapi refuses any request with a DPoP header unless the token is DPoP-bound; the
    // gate, on a `dpop: allowed` policy, serves an unbound Bearer token and ignores the header.
    name: 'DPoP header beside an unbound Bearer token',
    oracles: ['oauth4webapi'],
    gate: true,
    applies: ({ spec, built }) =>
      built.request.dpop !== undefined &&
      /^bearer /i.test(built.request.authorization) &&
      (spec.token.cnf === 'none' || (spec.token.cnf === 'auto' && spec.proof === null)),
  },
  {
    // RFC 7515 §2: unpadded base64url. jose's decoder takes `=` padding (the reference test's
    // shape rule too); oauth4webapi decodes with atob on Node 22, so padding and the standard
    // alphabet (`+`, `/`) pass. The gate refuses both before parsing (token-shape.ts).
    name: 'padded or standard-alphabet base64 segments',
    oracles: BOTH,
    gate: false,
    applies: (difference) =>
      segmentsOf(difference).some((m) =>
        ['padSignature', 'padHeader', 'standardAlphabet'].includes(m ?? ''),
      ),
  },
  {
    // oauth4webapi understands no `crit` extension; the gate follows jose's rules, under which
    // `crit: ["b64"]` with `b64: true` (RFC 7797, the default encoding) is understood.
    name: '"crit": ["b64"] with "b64": true',
    oracles: ['oauth4webapi'],
    gate: true,
    applies: ({ spec }) => spec.token.crit?.includes('b64') === true,
  },
  {
    // oauth4webapi refuses a `cnf` with any member beside `jkt`; the gate reads `jkt` and ignores
    // the rest (RFC 7800 §3.1 lets a confirmation carry more than one method).
    name: '"cnf" with a member beside "jkt"',
    oracles: ['oauth4webapi'],
    gate: true,
    applies: ({ spec }) => spec.token.cnf === 'extra',
  },
  {
    // The gate checks a proof's own `exp`/`nbf` (rarely sent) with no tolerance: the proof is
    // minted for this request; oauth4webapi gives them its 30 s clock tolerance.
    name: 'proof "exp"/"nbf" within the clock tolerance',
    oracles: ['oauth4webapi'],
    gate: false,
    applies: ({ spec }) =>
      (num(spec.proof?.exp) && spec.proof.exp <= 0 && spec.proof.exp > -TOLERANCE) ||
      (num(spec.proof?.nbf) && spec.proof.nbf > 0 && spec.proof.nbf <= TOLERANCE),
  },
];

/** The name of the known difference that explains `difference` for `oracle`, if any. */
export function explainDifference(
  oracle: 'jose' | 'oauth4webapi',
  difference: Difference,
): string | undefined {
  return KNOWN_DIFFERENCES.find(
    (known) =>
      known.oracles.includes(oracle) && known.gate === difference.gate && known.applies(difference),
  )?.name;
}

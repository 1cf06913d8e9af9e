// What a reloaded configuration may change in a running verifier: its policies and issuers, the
// parts every decision reads, which service.ts swaps in one step. Everything else is built once at
// start (listeners, stores, receivers, minted values' keys), so a file that changes any of it is
// refused whole, naming each such setting: the live configuration is always one file, never half
// of two.
import { isDeepStrictEqual } from 'node:util';
import type { VerifierConfig } from './model.js';

/** Which parts the running verifier built at start for its first configuration. */
export interface BuiltParts {
  /** A DPoP step (some policy read DPoP at start): a policy may then turn DPoP on or off. */
  readonly dpop: boolean;
  /** Revocation receivers, which read the issuers' logout audiences and token lifetimes. */
  readonly revocation: boolean;
}

const RELOADED = new Set(['issuers', 'policies']);

/** One line per setting `next` changes that only a restart applies; empty when none. */
export function needsRestart(
  running: VerifierConfig,
  next: VerifierConfig,
  built: BuiltParts,
): string[] {
  const problems: string[] = [];
  const say = (at: string, why: string) => problems.push(`${at}: ${why}; restart to apply`);
  const keys = new Set([...Object.keys(running), ...Object.keys(next)]);
  for (const key of [...keys].filter((name) => !RELOADED.has(name)).sort())
    if (!isDeepStrictEqual(running[key as keyof VerifierConfig], next[key as keyof VerifierConfig]))
      say(key, 'changed; read at start only');
  for (const [name, policy] of next.policies) {
    const before = running.policies.get(name);
    if (!isDeepStrictEqual(before?.mint, policy.mint))
      say(`policies.${name}.mint`, "changed; minted values' keys are loaded at start");
    if (policy.dpop !== 'off' && !built.dpop)
      say(`policies.${name}.dpop`, 'no policy read DPoP at start, so no DPoP replay store runs');
  }
  for (const [name, policy] of running.policies)
    if (policy.mint && !next.policies.has(name))
      say(`policies.${name}.mint`, "removed; minted values' keys are loaded at start");
  // Compared as lists: each read-only map carries mutators of its own (load.ts).
  if (built.revocation && !isDeepStrictEqual([...running.issuers], [...next.issuers]))
    say('issuers', 'changed while revocation receivers run (they read the issuers at start)');
  return problems;
}

// A Jazzer.js fuzz target around one of the three parsers of fuzz/targets.ts, with the invariants
// every input must keep: the parser answers with its own typed refusal (VerifyError,
// ReceiverError) or accepts; it accepts only what a trusted key signed (accepted-signature.ts,
// checked with jose, not the verifier's crypto path); and it decides within a time budget. A broken
// invariant throws, which Jazzer.js reports as a finding and saves the input as `crash-<sha1>`.
import { publicJwk } from '../../verifier/src/testing/fixtures.js';
import { createTargets, type Outcome, type TargetName } from '../../fuzz/targets.js';
import { signedByEmbeddedPublicKey, signedByOneOf } from './accepted-signature.js';

/**
 * The most one input may take. Far above any honest decision (a signature check is well under a
 * millisecond), far below Jazzer's own hang timeout, so a slow input is named by its size.
 */
export const DECISION_BUDGET_MS = 2000;

/** The keys fuzz/targets.ts trusts for access tokens and event tokens. */
const TRUSTED = [publicJwk('rsaA'), publicJwk('rsaB'), publicJwk('ec')];

/**
 * The access token of `Bearer <input>` as RFC 6750 §2.1 and RFC 9110 §5.6.3 delimit it: the
 * spaces after the scheme and the spaces and tabs ending a field value are no part of it.
 */
const bearerToken = (input: string) => input.replace(/^ +/, '').replace(/[ \t]+$/, '');

const signedAsExpected: Record<TargetName, (input: string) => Promise<boolean>> = {
  jws: (input) => signedByOneOf(bearerToken(input), TRUSTED),
  event: (input) => signedByOneOf(input, TRUSTED),
  dpop: signedByEmbeddedPublicKey,
};

/** A broken invariant, with what Jazzer.js should print about it. */
export class FuzzFinding extends Error {
  override readonly name = 'FuzzFinding';
}

/** Builds the parser a target decides with, given where it reports the error behind a crash. */
export type DecideWith = (onCrash: (error: unknown) => void) => (input: string) => Promise<Outcome>;

/**
 * The `fuzz(data)` function Jazzer.js calls for `target` (its parser from fuzz/targets.ts unless
 * `decideWith` says otherwise). Bytes are read as UTF-8, as the corpus seeds are written
 * (test/fuzz/bundle.ts); a byte sequence that is no UTF-8 reaches the parser as U+FFFD, one more
 * character it must refuse.
 */
export function createFuzzTarget(
  target: TargetName,
  decideWith: DecideWith = (onCrash) => createTargets(onCrash)[target],
): (data: Buffer) => Promise<void> {
  let crash: unknown;
  const decide = decideWith((error) => {
    crash = error;
  });
  const signed = signedAsExpected[target];

  return async function fuzz(data: Buffer): Promise<void> {
    const input = data.toString('utf8');
    crash = undefined;
    const started = performance.now();
    const outcome = await decide(input);
    const elapsed = performance.now() - started;
    if (outcome.startsWith('crash:'))
      throw new FuzzFinding(
        `the ${target} parser threw instead of refusing: ${crash instanceof Error ? (crash.stack ?? crash.message) : String(crash)}`,
      );
    if (elapsed > DECISION_BUDGET_MS)
      throw new FuzzFinding(
        `the ${target} parser took ${Math.round(elapsed)} ms (budget ${DECISION_BUDGET_MS} ms) for ${input.length} characters`,
      );
    if (outcome === 'accepted' && !(await signed(input)))
      throw new FuzzFinding(`the ${target} parser accepted an input no trusted key signed`);
  };
}

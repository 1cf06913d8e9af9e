// A Jazzer.js fuzz target around one of the three parsers of fuzz/targets.ts, with the invariants
// every input must keep: the parser answers with its own typed refusal (VerifyError,
// ReceiverError) or accepts; what it accepts is sound (raw targets: a trusted key signed it, as
// jose checks it, not the verifier's crypto path; signed targets, whose inputs are signed again
// by a trusted key: its claims name our issuer and audience and are not expired); and it decides
// within a time budget. A broken invariant throws, which Jazzer.js reports as a finding and saves
// the input as `crash-<sha1>`.
import { AUDIENCE, ISSUER, publicJwk } from '../../verifier/src/testing/fixtures.js';
import {
  createTargets,
  LOGOUT_AUDIENCE,
  NOW,
  SET_AUDIENCE,
  TARGET_NAMES,
  type Outcome,
  type TargetName,
} from '../../fuzz/targets.js';
import { signedByEmbeddedPublicKey, signedByOneOf } from './accepted-signature.js';
import { signAgain } from './sign-again.js';

/**
 * The most one input may take. Far above any honest decision (a signature check is well under a
 * millisecond), far below Jazzer's own hang timeout, so a slow input is named by its size.
 */
export const DECISION_BUDGET_MS = 2000;

/**
 * The fuzz targets (test/fuzz/<name>.fuzz.ts): each parser on the input as it comes, and the
 * two whose signature is a trusted key's on the input signed again (sign-again.ts). A signed
 * target starts from its parser's corpus.
 */
export const FUZZ_TARGETS = [...TARGET_NAMES, 'jws-signed', 'event-signed'] as const;
export type FuzzTargetName = (typeof FUZZ_TARGETS)[number];
export const parserOf = (name: FuzzTargetName) => name.replace(/-signed$/, '') as TargetName;

/** The keys fuzz/targets.ts trusts for access tokens and event tokens. */
const TRUSTED = [publicJwk('rsaA'), publicJwk('rsaB'), publicJwk('ec')];
/** The largest clock tolerance an issuer may have (config: 5 minutes). */
const MAX_TOLERANCE = 300;

/**
 * The access token of `Bearer <input>` as RFC 6750 §2.1 and RFC 9110 §5.6.3 delimit it: the
 * spaces after the scheme and the spaces and tabs ending a field value are no part of it.
 */
const bearerToken = (input: string) => input.replace(/^ +/, '').replace(/[ \t]+$/, '');

/** The payload of a compact JWS, or undefined when it is no JSON object. */
function claimsOf(jws: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(jws.split('.')[1] ?? '', 'base64url').toString());
    return value !== null && typeof value === 'object'
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** True when `claims` name `ISSUER`, one of `audiences` and an `exp` not yet past. */
function claimsHold(claims: Record<string, unknown> | undefined, audiences: string[]): boolean {
  if (claims?.iss !== ISSUER) return false;
  const aud = Array.isArray(claims.aud) ? (claims.aud as unknown[]) : [claims.aud];
  if (!aud.some((value) => audiences.includes(value as string))) return false;
  return (
    claims.exp === undefined || (typeof claims.exp === 'number' && claims.exp + MAX_TOLERANCE > NOW)
  );
}

/** Whether an accepted input is sound, by fuzz target. */
const soundAcceptance: Record<FuzzTargetName, (input: string) => Promise<boolean>> = {
  jws: (input) => signedByOneOf(bearerToken(input), TRUSTED),
  event: (input) => signedByOneOf(input, TRUSTED),
  dpop: signedByEmbeddedPublicKey,
  // An access token must carry `exp` (RFC 9068 §2.2); an event token need not (RFC 8417 §2.2).
  'jws-signed': (input) => {
    const claims = claimsOf(bearerToken(input));
    return Promise.resolve(typeof claims?.exp === 'number' && claimsHold(claims, [AUDIENCE]));
  },
  'event-signed': (input) =>
    Promise.resolve(claimsHold(claimsOf(input), [LOGOUT_AUDIENCE, SET_AUDIENCE])),
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
 * character it must refuse. A signed target signs the input again before the parser sees it.
 */
export function createFuzzTarget(
  target: FuzzTargetName,
  decideWith: DecideWith = (onCrash) => createTargets(onCrash)[parserOf(target)],
): (data: Buffer) => Promise<void> {
  let crash: unknown;
  const decide = decideWith((error) => {
    crash = error;
  });
  const sound = soundAcceptance[target];
  const prepare = target.endsWith('-signed') ? signAgain : (input: string) => input;

  return async function fuzz(data: Buffer): Promise<void> {
    const input = prepare(data.toString('utf8'));
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
    if (outcome === 'accepted' && !(await sound(input)))
      throw new FuzzFinding(
        target.endsWith('-signed')
          ? `the ${target} parser accepted claims not for this issuer and audience, or expired`
          : `the ${target} parser accepted an input no trusted key signed`,
      );
  };
}

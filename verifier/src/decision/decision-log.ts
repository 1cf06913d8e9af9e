// The decision log: one line per /verify decision, allow and refusal alike, at info, in a stable
// versioned JSON shape (docs/decision-log.md, decision-log.schema.json) a SIEM can parse. It names
// the policy, the set, the client, the issuer, the reason and the trace id; the subject only as a
// keyed hash (HMAC-SHA256 with a per-deployment key) unless the operator opts in; the token only
// as a fingerprint. Never a token, proof, key or secret value.
import { createHmac, hash, randomBytes } from 'node:crypto';
import { systemClock, type Clock } from '../clock.js';
import { statusFor } from '../errors.js';
import type { Logger } from '../log.js';
import { loggablePath } from '../log-path.js';
import type { Metrics } from '../metrics.js';
import { readTraceparent } from '../tracing/trace-context.js';
import type { Decision, VerifyRequest } from './decision.js';

/** The shape's version (`decision_log`): bumped only when a field changes meaning or goes away. */
export const DECISION_LOG_VERSION = 1;

/** How the subject (`sub`) appears: `hash` (HMAC, the default) or `plain` (the operator opted in). */
export type SubjectMode = 'hash' | 'plain';

export interface DecisionLogOptions {
  readonly logger: Logger;
  readonly metrics?: Metrics | undefined;
  /**
   * The HMAC key of `subject_hash` (VERIFIER_DECISION_LOG_KEY_FILE): the same key on every replica
   * and across restarts makes one user's lines joinable. Absent: a random key per process.
   */
  readonly subjectKey?: string | Buffer | undefined;
  readonly subject?: SubjectMode | undefined;
  /** The secret set NGINX serves an allow (http/verify-answer.ts's `X-Auth-Set`), by its name. */
  readonly setName?: ((issuer: string, client: string) => string | undefined) | undefined;
  readonly now?: Clock | undefined;
  /**
   * Past the budget, whether a line of this reason may be written: undefined while one was written
   * less than a second ago (revocation/log-throttle.ts, wired by service.ts). Default: every line.
   */
  readonly throttle?: ((reason: string) => number | undefined) | undefined;
}

/** A decision and why, for the log line (`detail` never holds a token or proof). */
export interface LoggedOutcome {
  readonly decision: Decision;
  readonly detail: string | undefined;
}

export type DecisionLog = (
  request: VerifyRequest,
  policy: string,
  token: string | undefined,
  outcome: LoggedOutcome,
) => void;

/** The first 8 hex digits of the token's SHA-256, for log lines: useless as a credential. */
const fingerprint = (token: string): string => hash('sha256', token, 'hex').slice(0, 8);

/** Lines a second of refusals without a verified token written before the throttle steps in. */
export const UNVERIFIED_LINES_PER_SECOND = 100;

/**
 * Each decision counted (by reason) and logged at info. A refusal that reached no verified token
 * (missing, malformed, badly signed, expired…) is what a flood of garbage is made of: past
 * UNVERIFIED_LINES_PER_SECOND such lines in one second, at most one a second per reason
 * (revocation/log-throttle.ts), the next one written saying how many were left out (`suppressed`). An
 * allow, and a refusal of a verified token, are always written.
 */
export function createDecisionLog(options: DecisionLogOptions): DecisionLog {
  const { logger, metrics, setName } = options;
  const key = options.subjectKey ?? randomBytes(32);
  const plain = options.subject === 'plain';
  const now = options.now ?? systemClock;
  const pass = options.throttle ?? (() => 0);
  let second = 0;
  let unverified = 0;
  let left = 0;
  /** Whether a refusal without a verified token is written (counted in `left` when not). */
  const admit = (reason: string): boolean => {
    const current = Math.floor(now());
    if (current !== second) [second, unverified] = [current, 0];
    if (++unverified <= UNVERIFIED_LINES_PER_SECOND || pass(reason) !== undefined) return true;
    left++;
    return false;
  };
  const subjectHash = (issuer: string, sub: string) =>
    createHmac('sha256', key).update(`${issuer}\n${sub}`).digest('hex').slice(0, 32);

  return function logDecision(request, policy, token, { decision, detail }) {
    metrics?.decision(decision.reason);
    const { identity } = decision;
    let suppressed: number | undefined;
    if (identity === undefined && decision.outcome === 'deny') {
      if (!admit(decision.reason)) return;
      [suppressed, left] = [left, 0];
    }
    // Below the logger's level the line is never written: no subject HMAC, no fingerprint.
    if (!logger.isLevelEnabled('info')) return;
    const trace = readTraceparent(request.traceparent);
    const allowed = decision.outcome === 'allow';
    // Without a client id NGINX serves the policy's `default` set.
    const set =
      allowed && identity ? (setName?.(identity.issuer, identity.client) ?? 'default') : undefined;
    logger.info(
      {
        decision_log: DECISION_LOG_VERSION,
        outcome: decision.outcome,
        status: allowed ? 204 : statusFor(decision.reason),
        reason: decision.reason,
        policy,
        set,
        client: identity?.client || undefined,
        issuer: identity?.issuer,
        subject_hash: identity && subjectHash(identity.issuer, identity.sub),
        subject: plain ? identity?.sub : undefined,
        trace_id: trace?.traceId,
        parent_span_id: trace?.parentSpanId,
        fp: token === undefined ? undefined : fingerprint(token),
        uri: loggablePath(request.originalUri),
        method: request.originalMethod,
        detail,
        suppressed: suppressed || undefined,
      },
      allowed ? 'allowed' : 'denied',
    );
  };
}

// What a transport would answer for a decision, for tests that assert on the wire contract.
import type { Decision } from '../decision/decision.js';
import { renderDecision, type VerifyAnswer } from '../http/verify-answer.js';

export const answerOf = (decision: Decision): VerifyAnswer => renderDecision(decision);
export const statusOf = (decision: Decision): number => renderDecision(decision).status;
/** Status and reason together, as the deny log line reports them. */
export const verdictOf = (decision: Decision) => ({
  status: statusOf(decision),
  reason: decision.reason,
});

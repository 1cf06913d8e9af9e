// Each decision counted (by reason) and logged: a denial at info with why, an allow at debug. The
// token appears only as a fingerprint, the path only as log-path.ts cuts it.
import { hash } from 'node:crypto';
import { statusFor } from '../errors.js';
import type { Logger } from '../log.js';
import { loggablePath } from '../log-path.js';
import type { Metrics } from '../metrics.js';
import type { Decision, VerifyRequest } from './decision.js';

/** The first 8 hex digits of the token's SHA-256, for log lines: useless as a credential. */
const fingerprint = (token: string): string => hash('sha256', token, 'hex').slice(0, 8);

/** `detail` says why, for the log line (never a token or proof). */
export function logDecision(
  logger: Logger,
  metrics: Metrics | undefined,
  request: VerifyRequest,
  policy: string,
  token: string | undefined,
  { decision, detail }: { readonly decision: Decision; readonly detail: string | undefined },
): void {
  metrics?.decision(decision.reason);
  if (decision.outcome !== 'allow') {
    const { reason } = decision;
    const fp = token === undefined ? undefined : fingerprint(token);
    const uri = loggablePath(request.originalUri);
    const method = request.originalMethod;
    logger.info({ status: statusFor(reason), reason, policy, fp, uri, method, detail }, 'denied');
  } else if (logger.isLevelEnabled('debug')) {
    const fp = token && fingerprint(token);
    logger.debug({ policy, fp, client: decision.identity?.client }, 'allowed');
  }
}

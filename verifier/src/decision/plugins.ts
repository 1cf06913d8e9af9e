// What the decision path asks of its plugins, declared here so the arrows point inward: dpop/,
// revocation/ and cloudfront/ implement these, the core never imports them, service.ts wires them.
import type { DpopMode, PolicyConfig } from '../config/model.js';
import type { VerifyRequest } from './authorize.js';
import type { Decision, Header } from './decision.js';
import type { Credentials } from '../token/token-shape.js';
import type { VerifiedToken } from '../token/verified-token.js';

/**
 * A policy's grant: what an allow hands out besides the identity, as ready answer headers. Called
 * on every allow (so time-limited values are fresh) with the time and the token's `exp` in epoch
 * seconds; nothing it hands out may outlive `exp`. It never throws: a grant it cannot make is
 * logged by the plugin and left out, and the allow stands.
 */
export type Grant = (nowSeconds: number, exp: number) => Promise<readonly Header[]>;

/** The pushed-revocation check (RFC 8417 events, logout tokens), after the cache, every request. */
export type RevocationCheck = (
  token: Pick<VerifiedToken, 'identity' | 'session'>,
  mode: PolicyConfig['revocation'],
) => 'valid' | 'revoked' | 'unavailable';

/** A decision and why, for the log line (never a token or proof). */
export interface DpopOutcome {
  readonly decision: Decision;
  readonly detail: string | undefined;
}

/**
 * The DPoP step (RFC 9449 §7) on the token's decision, cached or fresh: the same decision (with a
 * nonce header when nonces are on), or a deny carrying the `DPoP` challenge. `jkt` is the accepted
 * token's `cnf.jkt`, undefined when it is unbound or was refused.
 */
export type DpopStep = (
  mode: Exclude<DpopMode, 'off'>,
  decision: Decision,
  credentials: Credentials,
  request: VerifyRequest,
  jkt: string | undefined,
) => Promise<DpopOutcome>;

/** What a route other than /verify answers (health, metrics, a revocation receiver). */
export interface Answer {
  readonly status: number;
  readonly headers: readonly Header[];
  readonly body: string;
}

/** A POST body as a receiver (revocation/) reads it. */
export interface ReceivedRequest {
  readonly contentType: string | undefined;
  readonly body: string;
}

/** A POST endpoint of a plugin: the body in, an answer out. */
export type Receiver = (request: ReceivedRequest) => Promise<Answer>;

/** Bodies above this are refused by the transports before they reach a receiver. */
export const MAX_RECEIVER_BODY_BYTES = 16 * 1024;

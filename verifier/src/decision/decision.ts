// What /verify decided, as plain data: the outcome, why, who the token speaks for, and headers a
// plugin rendered. Status codes and challenges are the transport edge's (http/verify-answer.ts).
import type { DenyCode } from '../errors.js';
import type { Identity } from '../token/identity.js';

/** One answer header as a name/value pair, written to the wire as it is. */
export type Header = readonly [name: string, value: string];

export type Decision = (
  | { readonly outcome: 'allow'; readonly reason: 'allowed' }
  | { readonly outcome: 'deny'; readonly reason: DenyCode }
) & {
  /** Set when the token itself was accepted (an allow, and a deny for missing scopes). */
  readonly identity?: Identity | undefined;
  /** On a deny for missing scopes: the scopes the policy requires, for the challenge. */
  readonly requiredScopes?: readonly string[] | undefined;
  /** Whole seconds NGINX may reuse this answer (`X-Accel-Expires`); absent: never. */
  readonly edgeTtl?: number | undefined;
  /** Plugin-rendered headers, passed on unread: a grant, a DPoP nonce or `DPoP` challenge. */
  readonly headers?: readonly Header[] | undefined;
};

export function allow(identity: Identity): Decision {
  return { outcome: 'allow', reason: 'allowed', identity };
}

/** A deny; `identity` and `requiredScopes` only when the token was accepted (missing scopes). */
export function deny(code: DenyCode, identity?: Identity, scopes?: readonly string[]): Decision {
  if (identity === undefined) return { outcome: 'deny', reason: code };
  return { outcome: 'deny', reason: code, identity, requiredScopes: scopes };
}

/** The same decision with more headers rendered by a plugin. */
export function withHeaders(decision: Decision, headers: readonly Header[]): Decision {
  if (headers.length === 0) return decision;
  return { ...decision, headers: [...(decision.headers ?? []), ...headers] };
}

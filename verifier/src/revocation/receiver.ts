// The two receiving endpoints as functions of (content type, body) → Answer, independent of the
// HTTP library. Order everywhere: verify everything, then remember the `jti` (a replay is refused
// here), then write the watermarks; a refused token changes nothing.
import type { Logger } from '../log.js';
import type { Metrics, RevocationChannel } from '../metrics.js';
import type { Answer, ReceivedRequest } from '../decision/plugins.js';
import {
  ReceiverError,
  type LogoutTokenVerifier,
  type RefusalReason,
  type SetVerifier,
} from './event-token.js';
import type { ApplyRevocations } from './revocation.js';
import { interpretSet } from './set-events.js';
import { RevocationStoreUnavailable, type RevocationStore } from './store.js';

export interface ReceiverParts {
  readonly store: RevocationStore;
  readonly apply: ApplyRevocations;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly now: () => number;
}

const NO_STORE: Answer['headers'] = [['Cache-Control', 'no-store']];
const JSON_NO_STORE: Answer['headers'] = [['Content-Type', 'application/json'], ...NO_STORE];

function json(status: number, body: unknown): Answer {
  return { status, headers: JSON_NO_STORE, body: JSON.stringify(body) };
}

function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

/** Refusals the sender should retry later (503): the token may be fine, we could not check it. */
function retryable(reason: RefusalReason): boolean {
  return reason === 'store_unavailable' || reason === 'keys_unavailable';
}

/** RFC 8935 §2.3 / RFC 8936 error codes (the SET delivery error registry). */
function setDeliveryError(reason: RefusalReason): string {
  switch (reason) {
    case 'issuer_unknown':
      return 'invalid_issuer';
    case 'audience_mismatch':
      return 'invalid_audience';
    case 'key_unknown':
    case 'signature_invalid':
    case 'alg_not_allowed':
      return 'invalid_key';
    default:
      return 'invalid_request';
  }
}

/** Remembers the `jti`, then writes; the `jti` is forgotten again when the write fails. */
async function rememberAndApply(
  parts: ReceiverParts,
  replayKey: string,
  write: () => Promise<number>,
): Promise<number> {
  let fresh: boolean;
  try {
    fresh = await parts.store.remember(replayKey);
  } catch (error) {
    throw new ReceiverError('store_unavailable', (error as Error).message);
  }
  if (!fresh) throw new ReceiverError('jti_replayed', '"jti" was seen before');
  try {
    return await write();
  } catch (error) {
    if (!(error instanceof RevocationStoreUnavailable)) throw error;
    // The sender retries a 503; a remembered `jti` would turn that retry into a replay.
    await parts.store.forget(replayKey).catch(() => undefined);
    throw new ReceiverError('store_unavailable', error.message);
  }
}

/** Counts and logs a refusal; anything but a ReceiverError is logged as the bug it is. */
function refusal(
  parts: ReceiverParts,
  channel: RevocationChannel,
  error: unknown,
  what: string,
): ReceiverError {
  let refused: ReceiverError;
  if (error instanceof ReceiverError) refused = error;
  else {
    parts.logger.error(
      { err: (error as Error).message },
      'unexpected failure while receiving a revocation',
    );
    refused = new ReceiverError('request_invalid', 'the request could not be processed');
  }
  parts.metrics.revocationRefused(channel, refused.reason);
  parts.logger.info(
    { channel, reason: refused.reason, detail: refused.message },
    `${what} refused`,
  );
  return refused;
}

/** POST /backchannel-logout: `logout_token=…` (form), 200 or 400 `{"error", "error_description"}`. */
export function createLogoutReceiver(parts: ReceiverParts, verify: LogoutTokenVerifier) {
  const channel: RevocationChannel = 'backchannel_logout';
  return async function receiveLogout(request: ReceivedRequest): Promise<Answer> {
    parts.metrics.revocationReceived(channel);
    try {
      if (mediaType(request.contentType) !== 'application/x-www-form-urlencoded')
        throw new ReceiverError(
          'request_invalid',
          'the body must be application/x-www-form-urlencoded',
        );
      const tokens = new URLSearchParams(request.body).getAll('logout_token');
      if (tokens.length !== 1)
        throw new ReceiverError(
          'request_invalid',
          'the body must carry exactly one "logout_token"',
        );
      const logout = await verify(tokens[0]!);
      const written = await rememberAndApply(parts, `bcl\n${logout.issuer}\n${logout.jti}`, () =>
        parts.apply(logout.revocations),
      );
      parts.metrics.revocationApplied(channel, 'backchannel-logout');
      parts.logger.info(
        {
          issuer: logout.issuer,
          watermarks: written,
          kinds: logout.revocations.map((r) => r.kind),
        },
        'back-channel logout applied',
      );
      return { status: 200, headers: NO_STORE, body: '' };
    } catch (error) {
      const { reason, message } = refusal(parts, channel, error, 'logout token');
      return retryable(reason)
        ? json(503, { error: 'temporarily_unavailable', error_description: message })
        : json(400, { error: 'invalid_request', error_description: message });
    }
  };
}

export type SetOutcome =
  | { readonly ok: true }
  | {
      readonly ok: false;
      readonly err: string;
      readonly description: string;
      readonly retry: boolean;
    };

export type SetProcessor = (token: string, channel: RevocationChannel) => Promise<SetOutcome>;

/** Verifies one SET, checks its `jti` and acts on it; shared by push and poll. */
export function createSetProcessor(
  parts: ReceiverParts,
  verify: SetVerifier,
  transmitter: string,
): SetProcessor {
  return async function processSet(token, channel) {
    parts.metrics.revocationReceived(channel);
    try {
      const set = await verify(token);
      const { event, revocations, ignored } = interpretSet(set, parts.now() / 1000);
      await rememberAndApply(parts, `set\n${transmitter}\n${set.jti}`, () =>
        parts.apply(revocations),
      );
      if (ignored === undefined) {
        parts.metrics.revocationApplied(channel, event);
        parts.logger.info({ channel, event }, 'security event applied');
      } else {
        parts.metrics.revocationRefused(channel, ignored);
        parts.logger.info(
          { channel, event, eventType: set.eventType.slice(0, 200), why: ignored },
          'security event acknowledged and ignored',
        );
      }
      return { ok: true };
    } catch (error) {
      const { reason, message } = refusal(parts, channel, error, 'SET');
      return {
        ok: false,
        err: setDeliveryError(reason),
        description: message,
        retry: retryable(reason),
      };
    }
  };
}

/** POST /ssf/events (RFC 8935): one SET as `application/secevent+jwt`; 202, or 400 `{"err", …}`. */
export function createPushReceiver(processSet: SetProcessor) {
  return async function receivePush(request: ReceivedRequest): Promise<Answer> {
    if (mediaType(request.contentType) !== 'application/secevent+jwt')
      return json(400, {
        err: 'invalid_request',
        description: 'the body must be one SET sent as application/secevent+jwt',
      });
    const outcome = await processSet(request.body.trim(), 'ssf_push');
    if (outcome.ok) return { status: 202, headers: NO_STORE, body: '' };
    return json(outcome.retry ? 503 : 400, { err: outcome.err, description: outcome.description });
  };
}

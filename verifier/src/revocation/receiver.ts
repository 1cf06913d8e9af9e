// The receiving endpoints as functions of (content type, body) → Answer, independent of the HTTP
// library, and the one path every logout token and SET takes: verify everything, then remember the
// `jti` (a replay is refused here), then write the watermarks; a refused token changes nothing.
import type { Answer, ReceivedRequest, Receiver } from '../decision/plugins.js';
import type { Logger } from '../log.js';
import type { Metrics, RevocationChannel } from '../metrics.js';
import { ReceiverError, type EventVerifier, type RefusalReason } from './event-token.js';
import { RevocationStoreUnavailable, type RevocationStore } from './store.js';
import type { ApplyRevocations, Revocation } from './watermarks.js';

export interface ReceiverParts {
  readonly store: RevocationStore;
  readonly apply: ApplyRevocations;
  readonly metrics: Metrics;
  readonly logger: Logger;
}

/**
 * Reads, verifies and applies one token, counting and logging the outcome; resolves with the
 * refusal, or undefined when it was applied (or acknowledged and ignored). `read` may refuse the
 * request itself by throwing a ReceiverError.
 */
export type EventProcessor = (
  channel: RevocationChannel,
  read: () => string,
) => Promise<ReceiverError | undefined>;

const NO_STORE: Answer['headers'] = [['Cache-Control', 'no-store']];
const JSON_NO_STORE: Answer['headers'] = [['Content-Type', 'application/json'], ...NO_STORE];

function json(status: number, body: unknown): Answer {
  return { status, headers: JSON_NO_STORE, body: JSON.stringify(body) };
}

/** The body when its media type is `type`; else the request is refused with `refusal`. */
function bodyAs(request: ReceivedRequest, type: string, refusal: string): string {
  const media = (request.contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (media !== type) throw new ReceiverError('request_invalid', refusal);
  return request.body;
}

/** Refusals the sender should retry later (503): the token may be fine, we could not check it. */
export function retryable({ reason }: ReceiverError): boolean {
  return reason === 'store_unavailable' || reason === 'keys_unavailable';
}

/** RFC 8935 §2.3 / RFC 8936 `err` codes (the SET delivery error registry); the rest is a request. */
const SET_ERRORS: Partial<Record<RefusalReason, string>> = {
  issuer_unknown: 'invalid_issuer',
  audience_mismatch: 'invalid_audience',
  key_unknown: 'invalid_key',
  signature_invalid: 'invalid_key',
  alg_not_allowed: 'invalid_key',
};

/** A refused SET as push answers it and poll reports it (`setErrs`). */
export function setError({ reason, message }: ReceiverError): { err: string; description: string } {
  return { err: SET_ERRORS[reason] ?? 'invalid_request', description: message };
}

/** The processor for one kind of token; `replayPrefix` keeps the `jti`s of the kinds apart. */
export function createEventProcessor(
  parts: ReceiverParts,
  verify: EventVerifier,
  replayPrefix: 'bcl' | 'set',
): EventProcessor {
  const { store, metrics, logger } = parts;

  /** Remembers the `jti`, then writes; the `jti` is forgotten again when the write fails. */
  async function rememberAndApply(replayKey: string, revocations: readonly Revocation[]) {
    const fresh = await store.remember(replayKey).catch((error: Error) => {
      throw new ReceiverError('store_unavailable', error.message);
    });
    if (!fresh) throw new ReceiverError('jti_replayed', '"jti" was seen before');
    try {
      return await parts.apply(revocations);
    } catch (error) {
      if (!(error instanceof RevocationStoreUnavailable)) throw error;
      // The sender retries a 503; a remembered `jti` would turn that retry into a replay.
      await store.forget(replayKey).catch(() => undefined);
      throw new ReceiverError('store_unavailable', error.message);
    }
  }

  /** Anything but a ReceiverError is a bug: logged as one, refused as a request not processed. */
  function unexpected(error: unknown): ReceiverError {
    logger.error({ err: (error as Error).message }, 'unexpected failure receiving a revocation');
    return new ReceiverError('request_invalid', 'the request could not be processed');
  }

  return async function processEvent(channel, read) {
    metrics.revocationReceived(channel);
    try {
      const { sender, jti, event, revocations, ignored } = await verify(read());
      const written = await rememberAndApply(`${replayPrefix}\n${sender}\n${jti}`, revocations);
      if (ignored === undefined) metrics.revocationApplied(channel, event);
      else metrics.revocationRefused(channel, ignored);
      const kinds = revocations.map((r) => r.kind);
      logger.info(
        { channel, sender, event, watermarks: written, kinds, ...(ignored && { why: ignored }) },
        ignored ? 'revocation acknowledged and ignored' : 'revocation applied',
      );
      return undefined;
    } catch (error) {
      const refused = error instanceof ReceiverError ? error : unexpected(error);
      metrics.revocationRefused(channel, refused.reason);
      logger.info(
        { channel, reason: refused.reason, detail: refused.message },
        'revocation refused',
      );
      return refused;
    }
  };
}

/** POST /backchannel-logout: `logout_token=…` (form); 200, or 400 `{"error", "error_description"}`. */
export function createLogoutReceiver(processLogout: EventProcessor): Receiver {
  return async function receiveLogout(request) {
    const refused = await processLogout('backchannel_logout', () => {
      const form = 'application/x-www-form-urlencoded';
      const body = bodyAs(request, form, `the body must be ${form}`);
      const tokens = new URLSearchParams(body).getAll('logout_token');
      if (tokens.length !== 1)
        throw new ReceiverError(
          'request_invalid',
          'the body must carry exactly one "logout_token"',
        );
      return tokens[0]!;
    });
    if (refused === undefined) return { status: 200, headers: NO_STORE, body: '' };
    return retryable(refused)
      ? json(503, { error: 'temporarily_unavailable', error_description: refused.message })
      : json(400, { error: 'invalid_request', error_description: refused.message });
  };
}

/** POST /ssf/events (RFC 8935): one SET as `application/secevent+jwt`; 202, or 400 `{"err", …}`. */
export function createPushReceiver(processSet: EventProcessor): Receiver {
  return async function receivePush(request) {
    const refused = await processSet('ssf_push', () => {
      const set = 'application/secevent+jwt';
      return bodyAs(request, set, `the body must be one SET sent as ${set}`).trim();
    });
    if (refused === undefined) return { status: 202, headers: NO_STORE, body: '' };
    return json(retryable(refused) ? 503 : 400, setError(refused));
  };
}

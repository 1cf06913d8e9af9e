// The receiving endpoints as functions of (content type, body) → Answer, independent of the HTTP
// library, and the RFC 8936 poller. Every logout token and SET takes one path: verify everything,
// remember the `jti` (a replay is refused here), write the watermarks; a refused one changes nothing.
// Why a token was refused goes to the log (at most a line a second per reason); the answer carries
// the RFC's error code only.
import type { VerifierConfig } from '../config/model.js';
import type { Answer, ReceivedRequest, Receiver } from '../decision/decision.js';
import { fetchJson } from '../fetch-json.js';
import type { Logger } from '../log.js';
import type { Metrics, RevocationChannel } from '../metrics.js';
import { jsonRefusal } from '../refusals.js';
import type { EventVerifier, ReceivedEvent, Verified } from './event-token.js';
import { pairKeys } from './pair-keys.js';
import { ReceiverError, type RefusalReason } from './receiver-error.js';
import type { RevocationStore } from './store.js';
import type { Revocation } from './watermarks.js';

/** What every receiver takes: the store, the watermark writer, metrics and logs. */
export interface ReceiverParts {
  readonly store: RevocationStore;
  readonly apply: (revocations: readonly Revocation[]) => Promise<number>;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Seconds a `jti` of the channel is remembered: as long as a replay would still be accepted. */
  readonly replayTtl: (channel: RevocationChannel) => number;
  /** Shared by the receivers: undefined while the refusal's kind was logged in the last second. */
  readonly throttle: (kind: string) => number | undefined;
  /**
   * The budget of failed signature checks per sender key (`iss`, `kid`): true while the key may
   * fail once more (taking one). Asked only when a pushed token's signature did not verify, so a
   * token that verifies is never refused by it, whoever shares its sender's address.
   */
  readonly spendFailure?: (key: string) => boolean;
  /** Seconds a sender over the budget is told to wait (`Retry-After` on every 429). */
  readonly retryAfter?: string;
}

const NO_STORE: Answer['headers'] = [['Cache-Control', 'no-store']];

/** A forgery past its key's budget of failures: 429 and `Retry-After`, built once. */
function tooMany(parts: ReceiverParts): Answer {
  return jsonRefusal(429, { error: 'too_many_requests' }, [
    ['Retry-After', parts.retryAfter ?? '1'],
  ]);
}

/** Refusals the sender should retry later (503): the token may be fine, we could not check it. */
const retryable = ({ reason }: ReceiverError) =>
  reason === 'store_unavailable' || reason === 'keys_unavailable';

/** RFC 8935 §2.3 / RFC 8936 `err` codes (the SET delivery error registry); the rest is a request. */
const SET_ERRORS: Partial<Record<RefusalReason, string>> = {
  issuer_unknown: 'invalid_issuer',
  audience_mismatch: 'invalid_audience',
  key_unknown: 'invalid_key',
  signature_invalid: 'invalid_key',
  alg_not_allowed: 'invalid_key',
};

/** A refused SET as push answers it and poll reports it (`setErrs`): the code, the why logged. */
function setError({ reason }: ReceiverError): { err: string } {
  return { err: SET_ERRORS[reason] ?? 'invalid_request' };
}

/** A token's outcome: its refusal, or undefined when it was applied (or acknowledged, ignored). */
type Outcome = ReceiverError | undefined;

/**
 * Reads, verifies and applies one token, counting and logging the outcome: the refusal, or
 * undefined when it was applied (or acknowledged and ignored). `read` may refuse the request
 * itself by throwing a ReceiverError. A token refused before any key fetch or store call (all the
 * junk a flood sends) is answered at once, with no promise: only a token the key set must be
 * asked about, or one that verified and goes to the store, is a promise.
 */
function createEventProcessor(parts: ReceiverParts, verify: EventVerifier) {
  const { store, metrics, logger, throttle } = parts;
  /** Senders already warned that their `sid`-only logouts match no token. */
  const sidWarned = new Set<string>();
  /** The throttle's kind of each (channel, reason), built once (pair-keys.ts). */
  const kindOf = pairKeys((channel: RevocationChannel, reason: string) => `${channel} ${reason}`);

  /** A refusal counted and logged (at most a line a second per kind). */
  function refused(channel: RevocationChannel, error: unknown, clientKey?: string): ReceiverError {
    // Anything else is a bug: logged as one, refused as a request not processed.
    const unexpected = !(error instanceof ReceiverError);
    const refusal = unexpected
      ? new ReceiverError('request_invalid', (error as Error).message)
      : error;
    const { reason, message: detail } = refusal;
    metrics.revocationRefused(channel, reason);
    const suppressed = throttle(kindOf(channel, unexpected ? 'unexpected' : reason));
    if (suppressed === undefined) return refusal;
    if (unexpected)
      logger.error(
        { channel, err: detail, suppressed },
        'unexpected failure receiving a revocation',
      );
    else if (reason === 'rate_limited')
      logger.warn(
        { channel, client: clientKey, suppressed },
        "forged revocation pushes over their key's budget of failed signature checks refused (429)",
      );
    else logger.info({ channel, reason, detail, suppressed }, 'revocation refused');
    return refusal;
  }

  /** A verified token: its `jti` remembered (a replay is refused), its watermarks written. */
  async function accept(channel: RevocationChannel, verified: ReceivedEvent): Promise<Outcome> {
    const { sender, jti, event, revocations, ignored } = verified;
    // The kind first: an IdP may send logout tokens and SETs, with `jti`s of their own.
    const replayKey = `${channel === 'backchannel_logout' ? 'bcl' : 'set'}\n${sender}\n${jti}`;
    try {
      if (!(await store.remember(replayKey, parts.replayTtl(channel))))
        throw new ReceiverError('jti_replayed', '"jti" was seen before');
      const written = await parts.apply(revocations).catch(async (error: unknown) => {
        // The sender retries a 503; a remembered `jti` would turn that retry into a replay.
        await store.forget(replayKey).catch(() => undefined);
        throw error;
      });
      if (ignored === undefined) metrics.revocationApplied(channel, event);
      else metrics.revocationRefused(channel, ignored);
      if (ignored === 'sid_unmatched' && !sidWarned.has(sender)) {
        sidWarned.add(sender);
        logger.warn(
          { channel, sender },
          'logout tokens of this issuer name only a session ("sid"), which its access tokens do not carry: they revoke nothing; have the IdP add "sub" (counted as reason="sid_unmatched")',
        );
      }
      const kinds = revocations.map((r) => r.kind);
      logger.info(
        { channel, sender, event, watermarks: written, kinds, ...(ignored && { why: ignored }) },
        ignored ? 'revocation acknowledged and ignored' : 'revocation applied',
      );
      return undefined;
    } catch (error) {
      return refused(channel, error);
    }
  }

  /** A verified token accepted, a refused one counted and logged. */
  const settle = (channel: RevocationChannel, verified: Verified, clientKey?: string) =>
    verified instanceof ReceiverError
      ? refused(channel, verified, clientKey)
      : accept(channel, verified);

  /** `read(input)`: the token, prepared once per receiver so that a push makes no closure. */
  return function processEvent<T>(
    channel: RevocationChannel,
    input: T,
    read: (input: T) => string,
    clientKey?: string,
  ): Outcome | Promise<Outcome> {
    metrics.revocationReceived(channel);
    // Pushes only (the poller fetches what it asked for, from the transmitter it authenticated).
    const spend = channel === 'ssf_poll' ? undefined : parts.spendFailure;
    let verified: Verified | Promise<Verified>;
    try {
      verified = verify(read(input), spend);
    } catch (error) {
      return refused(channel, error, clientKey);
    }
    if (!(verified instanceof Promise)) return settle(channel, verified, clientKey);
    return verified.then(
      (outcome) => settle(channel, outcome, clientKey),
      (error: unknown) => refused(channel, error, clientKey),
    );
  };
}

/** The body when its media type is `type`; else the request is refused with `refusal`. */
function bodyAs(request: ReceivedRequest, type: string, refusal: string): string {
  const given = request.contentType ?? '';
  // As a sender writes it, nothing to cut or fold.
  if (given === type) return request.body;
  const end = given.indexOf(';');
  const media = (end === -1 ? given : given.slice(0, end)).trim().toLowerCase();
  if (media !== type) throw new ReceiverError('request_invalid', refusal);
  return request.body;
}

const LOGOUT_FIELD = 'logout_token=';

/**
 * The one `logout_token` of a form body. The form an IdP sends (the field alone, nothing to
 * decode: base64url and dots) is sliced; any other body is read by URLSearchParams, which decodes
 * names and values as a form parser must. (Three `indexOf`s, each a memchr, scan a body faster
 * than one character-class regular expression.)
 */
function logoutTokenOf(body: string): string {
  if (
    body.startsWith(LOGOUT_FIELD) &&
    body.indexOf('&') === -1 &&
    body.indexOf('%') === -1 &&
    body.indexOf('+') === -1
  )
    return body.slice(LOGOUT_FIELD.length);
  const tokens = new URLSearchParams(body).getAll('logout_token');
  if (tokens.length === 1) return tokens[0]!;
  throw new ReceiverError('request_invalid', 'the body must carry exactly one "logout_token"');
}

/** POST /backchannel-logout: `logout_token=…` (form); 200, or 400 `{"error", "error_description"}`. */
export function createLogoutReceiver(parts: ReceiverParts, verify: EventVerifier): Receiver {
  const form = 'application/x-www-form-urlencoded';
  const processLogout = createEventProcessor(parts, verify);
  const limited = tooMany(parts);
  // Every answer is one of four, built once: a flood of junk allocates none.
  const applied: Answer = { status: 200, headers: NO_STORE, body: '' };
  const invalid = jsonRefusal(400, { error: 'invalid_request' });
  const unavailable = jsonRefusal(503, { error: 'temporarily_unavailable' });
  const answerOf = (refused: ReceiverError | undefined): Answer => {
    if (refused === undefined) return applied;
    if (refused.reason === 'rate_limited') return limited;
    return retryable(refused) ? unavailable : invalid;
  };
  const notForm = `the body must be ${form}`;
  const readLogout = (request: ReceivedRequest) => logoutTokenOf(bodyAs(request, form, notForm));
  return function receiveLogout(request) {
    const outcome = processLogout('backchannel_logout', request, readLogout, request.clientKey);
    return outcome instanceof Promise ? outcome.then(answerOf) : answerOf(outcome);
  };
}

/** POST /ssf/events (RFC 8935): one SET as `application/secevent+jwt`; 202, or 400 `{"err", …}`. */
export function createPushReceiver(parts: ReceiverParts, verify: EventVerifier): Receiver {
  const set = 'application/secevent+jwt';
  const processSet = createEventProcessor(parts, verify);
  const limited = tooMany(parts);
  const accepted: Answer = { status: 202, headers: NO_STORE, body: '' };
  // The refusals by status and `err` code, each built the first time it is needed.
  const refusals = new Map<string, Answer>();
  const refusal = (status: number, err: string): Answer => {
    const key = `${status} ${err}`;
    let answer = refusals.get(key);
    if (answer === undefined) refusals.set(key, (answer = jsonRefusal(status, { err })));
    return answer;
  };
  const answerOf = (refused: ReceiverError | undefined): Answer => {
    if (refused === undefined) return accepted;
    if (refused.reason === 'rate_limited') return limited;
    return refusal(retryable(refused) ? 503 : 400, setError(refused).err);
  };
  const notSet = `the body must be one SET sent as ${set}`;
  const readSet = (request: ReceivedRequest) => bodyAs(request, set, notSet).trim();
  return function receivePush(request) {
    const outcome = processSet('ssf_push', request, readSet, request.clientKey);
    return outcome instanceof Promise ? outcome.then(answerOf) : answerOf(outcome);
  };
}

const MAX_SETS_PER_POLL = 100;

/** A polled SET: a string, or refused. */
function polledSet(set: unknown): string {
  if (typeof set === 'string') return set;
  throw new ReceiverError('request_invalid', 'the SET is not a string');
}

/**
 * RFC 8936 poll delivery from `revocation.ssf.pollEndpoint` (undefined without one). The next
 * request acknowledges (`ack`) the SETs processed and reports the refused ones (`setErrs`, never
 * redelivered); those it could not process now (store or keys unavailable) are neither, so they
 * come again. Polls again at once on `moreAvailable`; errors back off up to ten intervals.
 */
export function createPoller(
  config: Pick<VerifierConfig, 'revocation' | 'fetchTimeout'>,
  parts: ReceiverParts,
  verify: EventVerifier,
) {
  const { pollInterval: interval, pollToken, allowHttp } = config.revocation.ssf;
  const endpoint = config.revocation.ssf.pollEndpoint;
  if (endpoint === undefined) return undefined;
  const processSet = createEventProcessor(parts, verify);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (pollToken !== undefined) headers.authorization = `Bearer ${pollToken}`;
  let ack: string[] = [];
  let setErrs: Record<string, { err: string; description: string }> = {};
  let failures = 0;
  /** Seconds until the next poll. */
  let wait = 0;
  let running: Promise<number> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = true;

  const poll = async (): Promise<number> => {
    const answer = await fetchJson(endpoint, {
      method: 'POST',
      timeout: config.fetchTimeout,
      allowHttp,
      headers,
      body: JSON.stringify({
        ack,
        ...(Object.keys(setErrs).length > 0 && { setErrs }),
        maxEvents: 25,
        returnImmediately: true,
      }),
    });
    if (answer.status !== 200) throw new Error(`poll answered ${answer.status}`);
    // Delivered: the transmitter has them now.
    ack = [];
    setErrs = {};
    const body = (answer.body ?? {}) as { sets?: unknown; moreAvailable?: unknown };
    const sets = body.sets !== null && typeof body.sets === 'object' ? body.sets : {};
    const entries = Object.entries(sets as Record<string, unknown>).slice(0, MAX_SETS_PER_POLL);
    for (const [jti, set] of entries) {
      const refused = await processSet('ssf_poll', set, polledSet);
      if (refused === undefined) ack.push(jti);
      // Only to the transmitter this poll authenticated, as RFC 8936 §2.4 reports errors.
      else if (!retryable(refused))
        setErrs[jti] = { ...setError(refused), description: refused.message };
    }
    failures = 0;
    // Acknowledgements go out with the next poll: soon when there are any.
    const owed = ack.length + Object.keys(setErrs).length > 0;
    wait = body.moreAvailable === true ? 0 : owed ? 0.05 : interval;
    return entries.length;
  };

  /** One poll now (or the one running); resolves with the number of SETs received. */
  function pollOnce(): Promise<number> {
    running ??= poll()
      .catch((error: unknown) => {
        wait = Math.min(interval * 2 ** failures, interval * 10);
        failures++;
        const err = (error as Error).message;
        parts.logger.warn({ err, retryIn: wait }, 'SSF poll failed; backing off');
        return 0;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  }

  return {
    /** Polls, waiting `wait` seconds after each poll, until `stop()`. */
    async start() {
      stopped = false;
      while (!stopped) {
        await pollOnce();
        await new Promise((resolve) => (timer = setTimeout(resolve, wait * 1000).unref()));
      }
    },
    pollOnce,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

// RFC 8936 poll delivery: the receiver asks the transmitter for SETs and acknowledges the ones it
// processed in the next request, so a sidecar needs no inbound route.
import type { VerifierConfig } from '../config/model.js';
import { fetchJson } from '../fetch-json.js';
import type { Logger } from '../log.js';
import { ReceiverError } from './event-token.js';
import { retryable, setError, type EventProcessor } from './receiver.js';

export interface Poller {
  start(): void;
  /** One poll now (acknowledging what is pending); resolves with the number of SETs received. */
  pollOnce(): Promise<number>;
  stop(): void;
}

const MAX_SETS_PER_POLL = 100;

/**
 * Polls `revocation.ssf.pollEndpoint` (undefined without one). SETs it refused are reported in
 * `setErrs` (and so never redelivered); SETs it could not process right now (store or keys
 * unavailable) are neither acknowledged nor reported, so the transmitter delivers them again.
 * Errors back off from the interval up to ten times it; `moreAvailable` polls again at once.
 */
export function createPoller(
  config: Pick<VerifierConfig, 'revocation' | 'fetchTimeout'>,
  processSet: EventProcessor,
  logger: Logger,
): Poller | undefined {
  const { pollEndpoint, pollInterval: interval, pollToken, allowHttp } = config.revocation.ssf;
  if (pollEndpoint === undefined) return undefined;
  const endpoint = pollEndpoint;
  let ack: string[] = [];
  let setErrs: Record<string, { err: string; description: string }> = {};
  let timer: NodeJS.Timeout | undefined;
  let stopped = true;
  let failures = 0;
  let running: Promise<number> | undefined;

  async function poll(): Promise<{ received: number; more: boolean }> {
    const answer = await fetchJson(endpoint, {
      method: 'POST',
      timeout: config.fetchTimeout,
      allowHttp,
      headers: {
        'content-type': 'application/json',
        ...(pollToken === undefined ? {} : { authorization: `Bearer ${pollToken}` }),
      },
      body: JSON.stringify({
        ack,
        ...(Object.keys(setErrs).length > 0 ? { setErrs } : {}),
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
      const refused = await processSet('ssf_poll', () => {
        if (typeof set === 'string') return set;
        throw new ReceiverError('request_invalid', 'the SET is not a string');
      });
      if (refused === undefined) ack.push(jti);
      else if (!retryable(refused)) setErrs[jti] = setError(refused);
    }
    return { received: entries.length, more: body.moreAvailable === true };
  }

  function schedule(seconds: number): void {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(() => void cycle(), seconds * 1000);
    timer.unref();
  }

  async function cycle(): Promise<number> {
    running ??= poll()
      .then(({ received, more }) => {
        failures = 0;
        // Acknowledgements go out with the next poll; send them soon when there were any.
        schedule(more ? 0 : ack.length > 0 || Object.keys(setErrs).length > 0 ? 0.05 : interval);
        return received;
      })
      .catch((error: unknown) => {
        failures++;
        const wait = Math.min(interval * 2 ** (failures - 1), interval * 10);
        logger.warn(
          { err: (error as Error).message, retryIn: wait },
          'SSF poll failed; backing off',
        );
        schedule(wait);
        return 0;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  }

  return {
    start() {
      stopped = false;
      void cycle();
    },
    pollOnce: cycle,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

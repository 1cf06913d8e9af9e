// Keeps a set current: fetches it, then fetches it again before its earliest minted value
// expires, asking the app's token getter each time (no new sign-in). A static set is fetched
// once. A renewal the gate could not serve for a passing reason (network, 429, 502, 503, 5xx)
// is retried after its Retry-After or a few seconds; a refusal (401, 403, step-up, 404) stops it.
import type { SecretGateErrorCode } from './gate-error.js';
import type { SecretGateClient, SetResult } from './client.js';

/** Codes after which trying again later can succeed without the person doing anything. */
const PASSING: ReadonlySet<SecretGateErrorCode> = new Set([
  'network',
  'rate_limited',
  'mint_failed',
  'unavailable',
  'server_error',
  'bad_response',
]);

/** Seconds before a failed renewal is tried again when the gate did not say. */
export const RETRY_SECONDS = 5;

export interface WatchSetOptions {
  /** A named set; absent for the caller's default set. */
  readonly set?: string | undefined;
  /** Called with every result: the first fetch, each renewal, each failure. */
  readonly onResult: (result: SetResult) => void;
  /** Aborting it stops the watch, as `stop()` does. */
  readonly signal?: AbortSignal | undefined;
}

export interface SetWatch {
  /** Fetches now (a fetch in flight is abandoned) and schedules from the new answer. */
  refresh(): Promise<void>;
  /** Cancels the fetch in flight and the next renewal; no result is reported after it. */
  stop(): void;
}

/** Starts watching a set: the first fetch starts at once. */
export function watchSet(
  client: SecretGateClient,
  options: WatchSetOptions,
  now: () => number = Date.now,
): SetWatch {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let inFlight: AbortController | undefined;
  let stopped = false;
  let renewing = false;

  function schedule(result: SetResult): void {
    if (result.ok) {
      renewing = result.set.renewAt !== undefined;
      if (result.set.renewAt === undefined) return;
      const delayMs = Math.max(0, result.set.renewAt * 1000 - now());
      timer = setTimeout(() => void refresh(), delayMs);
      return;
    }
    // Only a set with minted values needs keeping alive; a first fetch's failure is the app's.
    if (!renewing || !PASSING.has(result.error.code)) return;
    timer = setTimeout(
      () => void refresh(),
      (result.error.retryAfterSeconds ?? RETRY_SECONDS) * 1000,
    );
  }

  async function refresh(): Promise<void> {
    if (stopped) return;
    clearTimeout(timer);
    inFlight?.abort();
    const controller = new AbortController();
    inFlight = controller;
    const result = await client.fetchSet({ set: options.set, signal: controller.signal });
    // Stopped, or a newer fetch took over while this one was in flight.
    if (stopped || inFlight !== controller) return;
    inFlight = undefined;
    options.onResult(result);
    schedule(result);
  }

  function stop(): void {
    stopped = true;
    clearTimeout(timer);
    inFlight?.abort();
    inFlight = undefined;
  }

  if (options.signal?.aborted) stopped = true;
  options.signal?.addEventListener('abort', stop, { once: true });
  void refresh();
  return { refresh, stop };
}

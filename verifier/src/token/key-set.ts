// One issuer's signing keys (its JWKS), fetched and refreshed by us; jose checks the document and
// matches and imports the keys (createLocalJWKSet). Not jose's remote set: that one fails closed
// once its cache is stale, reads no Cache-Control, and times its cooldown by the wall clock.
import {
  createLocalJWKSet,
  errors,
  type CryptoKey,
  type JSONWebKeySet,
  type JWSHeaderParameters,
} from 'jose';
import type { Clock, EpochSeconds } from '../clock.js';
import { VerifyError } from '../errors.js';
import { FetchError, fetchJson, type FetchedJson } from '../fetch-json.js';

export type JwksFetchOutcome = 'ok' | 'error' | 'invalid';
type HeldKeySet = ReturnType<typeof createKeySet>;
/** A key set; `knownKey` is optional, so a source without it (a test's local set) is waited for. */
export type KeySet = Omit<HeldKeySet, 'knownKey' | 'refusesAtOnce'> &
  Partial<Pick<HeldKeySet, 'knownKey' | 'refusesAtOnce'>>;

/**
 * Loaded at start and refreshed in the background every `refresh` seconds (a smaller
 * `Cache-Control: max-age` shortens it, never below `cooldown`); a failure retries every
 * `cooldown`. An unknown `kid` triggers at most one fetch per `cooldown`, and concurrent fetches
 * are merged. After a failed refresh the last good set keeps serving for `maxStale` seconds after
 * the last good fetch, then tokens are refused (`keys_unavailable`). No redirects (fetch-json.ts).
 */
export function createKeySet(options: {
  readonly issuer: string;
  /** The JWKS URL, configured or discovered. */
  readonly resolveUri: () => Promise<string>;
  /** Seconds. */
  readonly refresh: number;
  readonly cooldown: number;
  readonly maxStale: number;
  readonly timeout: number;
  readonly allowHttp?: boolean;
  /** Injected so tests can move time. */
  readonly now: Clock;
  readonly onFetch?: (outcome: JwksFetchOutcome, detail?: string) => void;
  /** Called with the `kid`s (undefined for keys without one) that left the set. */
  readonly onKeysRemoved?: (kids: ReadonlySet<string | undefined>) => void;
}) {
  const { issuer, now } = options;
  const floor = Math.min(options.cooldown, options.refresh);
  let local: ReturnType<typeof createLocalJWKSet> | undefined;
  /**
   * The keys jose matched and imported in the held set, by `alg` and `kid` (all jose's match
   * reads of a header): a token under a known key is verified with no promise. Emptied with each
   * new set, so a key that left is never found here.
   */
  let known = new Map<string, CryptoKey>();
  let kids = new Set<string | undefined>();
  let loadedAt: EpochSeconds = -Infinity;
  let lastOnDemandAt: EpochSeconds = -Infinity;
  let inFlight: Promise<boolean> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  const trustedUntilSeconds = (): EpochSeconds => loadedAt + options.maxStale;
  const isFresh = (): boolean => local !== undefined && now() <= trustedUntilSeconds();

  /** One fetch; true when a new set was installed. Schedules the next one either way. */
  async function load(): Promise<boolean> {
    let uri = '';
    let answer: FetchedJson;
    try {
      uri = await options.resolveUri();
      answer = await fetchJson(uri, { timeout: options.timeout, allowHttp: options.allowHttp });
      if (answer.status !== 200) throw new FetchError(`${uri}: status ${answer.status}`);
      // jose checks the document's shape (a `keys` array of objects) and matches keys later.
      local = createLocalJWKSet(answer.body as JSONWebKeySet);
      known = new Map();
    } catch (error) {
      const { message } = error as Error;
      if (error instanceof errors.JWKSInvalid) options.onFetch?.('invalid', `${uri}: ${message}`);
      else options.onFetch?.('error', message);
      schedule(floor);
      return false;
    }
    const nextKids = new Set((answer.body as JSONWebKeySet).keys.map((key) => key.kid));
    const removed = new Set([...kids].filter((kid) => !nextKids.has(kid)));
    kids = nextKids;
    loadedAt = now();
    options.onFetch?.('ok');
    if (removed.size > 0) options.onKeysRemoved?.(removed);
    const maxAge = /(?:^|,)\s*max-age=(\d+)/i.exec(answer.headers.get('cache-control') ?? '');
    const wanted = maxAge ? Number(maxAge[1]) : options.refresh;
    schedule(Math.max(floor, Math.min(wanted, options.refresh)));
    return true;
  }

  function schedule(seconds: number): void {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(() => void refresh(), seconds * 1000);
    timer.unref();
  }

  function refresh(): Promise<boolean> {
    inFlight ??= load().finally(() => (inFlight = undefined));
    return inFlight;
  }

  /** An on-demand fetch, allowed once per cooldown; callers wait for a fetch already running. */
  async function refetchForUnknownKey(): Promise<boolean> {
    if (inFlight) return inFlight;
    if (now() - lastOnDemandAt < options.cooldown) return false;
    lastOnDemandAt = now();
    return refresh();
  }

  /** `alg` and `kid` as one map key; undefined for a `kid` jose would match nothing with. */
  const knownAs = ({ alg, kid }: JWSHeaderParameters) =>
    kid === undefined ? `${alg}\n` : typeof kid === 'string' ? `${alg}\n${kid}` : undefined;

  /** jose's match in the held set, undefined for none; a match is remembered for `knownKey`. */
  const match = (header: JWSHeaderParameters) => {
    // A `kid` the held set does not name matches nothing (jose compares it exactly): answered
    // without asking jose, whose "no matching key" error captures a stack each time, the larger
    // part of a junk push's cost under made-up `kid`s (docs/performance.md, "Junk at the receivers").
    const { kid } = header;
    if (kid !== undefined && (typeof kid !== 'string' || !kids.has(kid)))
      return Promise.resolve(undefined);
    const set = known;
    return local!(header).then(
      (key) => {
        const name = knownAs(header);
        if (name !== undefined && set === known) known.set(name, key);
        return key;
      },
      (error: unknown) => {
        if (error instanceof errors.JWKSNoMatchingKey) return undefined;
        throw error;
      },
    );
  };

  return {
    issuer,
    /** Loads the set and schedules refreshes; resolves whether or not the first fetch worked. */
    async start(): Promise<void> {
      await refresh();
    },
    /** True while a key set younger than `maxStale` is held. */
    isReady: isFresh,
    /** Until when the held set is trusted (last good fetch + `maxStale`). */
    trustedUntilSeconds,
    /**
     * The key jose already matched for this header's `alg` and `kid` in the held set, while the
     * set is trusted; undefined otherwise (then `getKey`, which fetches and refuses as it must).
     */
    knownKey(header: JWSHeaderParameters): CryptoKey | undefined {
      const name = knownAs(header);
      return name === undefined || !isFresh() ? undefined : known.get(name);
    },
    /**
     * True when `getKey` would refuse this header's `kid` as unknown without fetching: the
     * trusted set does not name it, no fetch is running and the cooldown forbids another. The
     * receivers then refuse a made-up `kid` with no promise to wait for.
     */
    refusesAtOnce(header: JWSHeaderParameters): boolean {
      const { kid } = header;
      return (
        kid !== undefined &&
        (typeof kid !== 'string' || !kids.has(kid)) &&
        inFlight === undefined &&
        isFresh() &&
        now() - lastOnDemandAt < options.cooldown
      );
    },
    /** The key for a token header, refetching once per cooldown for an unknown `kid`. */
    async getKey(header: JWSHeaderParameters) {
      if (!isFresh()) {
        await refetchForUnknownKey();
        if (!isFresh())
          throw new VerifyError('keys_unavailable', `keys of "${issuer}" are not available`);
      }
      const key =
        (await match(header)) ?? ((await refetchForUnknownKey()) ? await match(header) : undefined);
      if (key === undefined)
        throw new VerifyError('key_unknown', `no key of "${issuer}" matches the token's "kid"`);
      return key;
    },
    /** Fetches now (merged with a fetch already running); true when a new set was installed. */
    refresh,
    stop(): void {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

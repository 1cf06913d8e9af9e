// One issuer's signing keys, driven by us rather than by jose's remote set: jose's own remote set
// fails closed once its cache is stale (we want the last good keys to keep serving while the IdP
// is down), reads no Cache-Control, and times its cooldown by the wall clock rather than an
// injected one. jose still checks the document, matches and imports the keys (createLocalJWKSet).
//
// Behaviour:
// - loaded at start, refreshed in the background every `refresh` seconds (a smaller
//   `Cache-Control: max-age` shortens it, never below `cooldown`); failures retry every `cooldown`;
// - an unknown `kid` triggers at most one fetch per `cooldown`; concurrent fetches are merged;
// - after a failed refresh the last good set keeps serving for `maxStale` seconds after the last
//   successful fetch, then tokens are refused (keys_unavailable);
// - no redirects (see fetch-json.ts); keys that leave the set are reported to `onKeysRemoved`.
import { createLocalJWKSet, errors, type JSONWebKeySet, type JWSHeaderParameters } from 'jose';
import { VerifyError } from '../errors.js';
import { FetchError, fetchJson, type FetchedJson } from '../fetch-json.js';

export type JwksFetchOutcome = 'ok' | 'error' | 'invalid';

export interface KeySetOptions {
  readonly issuer: string;
  /** The JWKS URL, configured or discovered. */
  readonly resolveUri: () => Promise<string>;
  readonly refresh: number;
  readonly cooldown: number;
  readonly maxStale: number;
  readonly timeout: number;
  /** The issuer's opt-in to plain http to a host that is not loopback. */
  readonly allowHttp?: boolean;
  /** Milliseconds since the epoch; injected so tests can move time. */
  readonly now: () => number;
  readonly onFetch?: (outcome: JwksFetchOutcome, detail?: string) => void;
  /** Called with the `kid`s (undefined for keys without one) that left the set. */
  readonly onKeysRemoved?: (kids: ReadonlySet<string | undefined>) => void;
}

type KeyGetter = ReturnType<typeof createLocalJWKSet>;
export type VerificationKey = Awaited<ReturnType<KeyGetter>>;

export interface KeySet {
  readonly issuer: string;
  /** Loads the set once and schedules refreshes; resolves whether or not the first fetch worked. */
  start(): Promise<void>;
  /** True while a key set younger than `maxStale` is held. */
  isReady(): boolean;
  /** Milliseconds since the epoch until which the held set is trusted (last good fetch + `maxStale`). */
  trustedUntil(): number;
  /** The key for a token header, refetching once per cooldown for an unknown `kid`. */
  getKey(header: JWSHeaderParameters): Promise<VerificationKey>;
  /** Fetches now (merged with a fetch already running); true when a new set was installed. */
  refresh(): Promise<boolean>;
  stop(): void;
}

export function createKeySet(options: KeySetOptions): KeySet {
  const { issuer, now } = options;
  let local: KeyGetter | undefined;
  let kids = new Set<string | undefined>();
  let loadedAt = -Infinity;
  let lastOnDemandAt = -Infinity;
  let inFlight: Promise<boolean> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  const trustedUntil = (): number => loadedAt + options.maxStale * 1000;
  const isFresh = (): boolean => local !== undefined && now() - loadedAt <= options.maxStale * 1000;

  async function fetchOnce(): Promise<{ ok: boolean; maxAge: number | undefined }> {
    const failed = (outcome: JwksFetchOutcome, detail: string) => {
      options.onFetch?.(outcome, detail);
      return { ok: false, maxAge: undefined };
    };
    let uri: string;
    let answer: FetchedJson;
    try {
      uri = await options.resolveUri();
      answer = await fetchJson(uri, { timeout: options.timeout, allowHttp: options.allowHttp });
      if (answer.status !== 200) throw new FetchError(`${uri}: status ${answer.status}`);
    } catch (error) {
      return failed('error', (error as Error).message);
    }
    // jose checks the document's shape (a `keys` array of objects) and matches keys later.
    const jwks = answer.body as JSONWebKeySet;
    let getter: KeyGetter;
    try {
      getter = createLocalJWKSet(jwks);
    } catch (error) {
      return failed('invalid', `${uri}: ${(error as Error).message}`);
    }
    const nextKids = new Set(jwks.keys.map((key) => key.kid));
    const removed = new Set([...kids].filter((kid) => !nextKids.has(kid)));
    local = getter;
    kids = nextKids;
    loadedAt = now();
    options.onFetch?.('ok');
    if (removed.size > 0) options.onKeysRemoved?.(removed);
    const maxAge = /(?:^|,)\s*max-age=(\d+)/i.exec(answer.headers.get('cache-control') ?? '');
    return { ok: true, maxAge: maxAge ? Number(maxAge[1]) : undefined };
  }

  function schedule(seconds: number): void {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(() => void refresh(), seconds * 1000);
    timer.unref();
  }

  function refresh(): Promise<boolean> {
    inFlight ??= fetchOnce().then(({ ok, maxAge }) => {
      inFlight = undefined;
      const floor = Math.min(options.cooldown, options.refresh);
      schedule(ok ? Math.max(floor, Math.min(maxAge ?? options.refresh, options.refresh)) : floor);
      return ok;
    });
    return inFlight;
  }

  /** An on-demand fetch, allowed once per cooldown; callers wait for a fetch already running. */
  async function refetchForUnknownKey(): Promise<boolean> {
    if (inFlight) return inFlight;
    if (now() - lastOnDemandAt < options.cooldown * 1000) return false;
    lastOnDemandAt = now();
    return refresh();
  }

  /** jose's match in the held set; undefined when no key matches. */
  async function match(header: JWSHeaderParameters): Promise<VerificationKey | undefined> {
    try {
      return await local!(header);
    } catch (error) {
      if (error instanceof errors.JWKSNoMatchingKey) return undefined;
      throw error;
    }
  }

  async function getKey(header: JWSHeaderParameters): Promise<VerificationKey> {
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
  }

  return {
    issuer,
    async start() {
      await refresh();
    },
    isReady: isFresh,
    trustedUntil,
    getKey,
    refresh,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

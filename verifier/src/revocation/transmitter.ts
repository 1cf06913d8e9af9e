// The Shared Signals transmitter we trust: its `/.well-known/ssf-configuration` (SSF 1.0 §7.1)
// must name it as `issuer`, and its `jwks_uri` is the only place SET keys come from. The key set
// is ours (key-set.ts): background refresh, refetch on an unknown `kid`, last good keys kept.
import type { VerifierConfig } from '../config/model.js';
import { FetchError, fetchJson } from '../fetch-json.js';
import { createKeySet, type KeySet, type KeySetOptions } from '../token/key-set.js';

export function ssfConfigurationUrl(transmitter: string): string {
  return `${transmitter.replace(/\/$/, '')}/.well-known/ssf-configuration`;
}

/** Resolves the transmitter's `jwks_uri` once (retried on failure); refuses another `issuer`. */
export function createJwksUriResolver(
  transmitter: string,
  timeout: number,
  allowHttp: boolean,
): () => Promise<string> {
  let found: string | undefined;
  return async () => {
    if (found !== undefined) return found;
    const url = ssfConfigurationUrl(transmitter);
    const { status, body } = await fetchJson(url, { timeout, allowHttp });
    if (status !== 200) throw new FetchError(`${url}: status ${status}`);
    const metadata = (body ?? {}) as Record<string, unknown>;
    if (metadata.issuer !== transmitter)
      throw new FetchError(
        `${url}: "issuer" is ${JSON.stringify(metadata.issuer)}, expected "${transmitter}"`,
      );
    if (typeof metadata.jwks_uri !== 'string') throw new FetchError(`${url}: no "jwks_uri"`);
    found = metadata.jwks_uri;
    return found;
  };
}

export function createTransmitterKeySet(
  config: Pick<VerifierConfig, 'jwks' | 'fetchTimeout' | 'revocation'>,
  options: Pick<KeySetOptions, 'now' | 'onFetch' | 'onKeysRemoved'>,
): KeySet {
  const { transmitter, allowHttp } = config.revocation.ssf;
  if (transmitter === undefined) throw new TypeError('no Shared Signals transmitter configured');
  return createKeySet({
    issuer: transmitter,
    resolveUri: createJwksUriResolver(transmitter, config.fetchTimeout, allowHttp),
    ...config.jwks,
    timeout: config.fetchTimeout,
    allowHttp,
    ...options,
  });
}

// Discovery documents (OpenID Connect Discovery 1.0 §4, and SSF 1.0 §7.1 for a Shared Signals
// transmitter): an endpoint is read from the issuer's well-known document, which must name that
// same issuer (Discovery §4.3), so a document cannot hand out another issuer's keys.
import { FetchError, fetchJson } from '../fetch-json.js';

/**
 * Resolves an endpoint once: `configured`, or found in the `document` well-known on first use with
 * the issuer's fetch settings (a failed discovery is tried again on the next call).
 */
export function createEndpointResolver(
  { issuer, timeout, allowHttp }: { issuer: string; timeout: number; allowHttp?: boolean },
  configured: string | undefined,
  field: 'jwks_uri' | 'introspection_endpoint' | 'token_endpoint',
  document = 'openid-configuration',
): () => Promise<string> {
  let found: string | undefined = configured;
  return async () => {
    if (found !== undefined) return found;
    const url = `${issuer.replace(/\/$/, '')}/.well-known/${document}`;
    const { status, body } = await fetchJson(url, { timeout, allowHttp });
    if (status !== 200) throw new FetchError(`${url}: status ${status}`);
    const metadata = (body ?? {}) as Record<string, unknown>;
    if (metadata.issuer !== issuer)
      throw new FetchError(
        `${url}: "issuer" is ${JSON.stringify(metadata.issuer)}, expected "${issuer}"`,
      );
    const value = metadata[field];
    if (typeof value !== 'string') throw new FetchError(`${url}: no "${field}"`);
    return (found = value);
  };
}

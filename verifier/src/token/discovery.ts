// OIDC discovery (OpenID Connect Discovery 1.0 §4): finds the JWKS, introspection and user-info
// endpoints from the issuer, and insists that the document names the same issuer (§4.3).
import { FetchError, fetchJson } from '../fetch-json.js';

export interface IssuerMetadata {
  readonly jwks_uri?: string;
  readonly introspection_endpoint?: string;
  readonly userinfo_endpoint?: string;
}

export async function discover(
  issuer: string,
  timeout: number,
  allowHttp = false,
): Promise<IssuerMetadata> {
  const url = `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
  const { status, body } = await fetchJson(url, { timeout, allowHttp });
  if (status !== 200) throw new FetchError(`${url}: status ${status}`);
  if (typeof body !== 'object' || body === null) throw new FetchError(`${url}: not a JSON object`);
  const metadata = body as Record<string, unknown>;
  if (metadata.issuer !== issuer) {
    throw new FetchError(
      `${url}: "issuer" is ${JSON.stringify(metadata.issuer)}, expected "${issuer}"`,
    );
  }
  const pick = (name: string): string | undefined =>
    typeof metadata[name] === 'string' ? metadata[name] : undefined;
  const found: { jwks_uri?: string; introspection_endpoint?: string; userinfo_endpoint?: string } =
    {};
  for (const name of ['jwks_uri', 'introspection_endpoint', 'userinfo_endpoint'] as const) {
    const value = pick(name);
    if (value !== undefined) found[name] = value;
  }
  return found;
}

/** Resolves an endpoint once: configured explicitly, or found by discovery on first use. */
export function createEndpointResolver(
  issuer: string,
  configured: string | undefined,
  field: keyof IssuerMetadata,
  timeout: number,
  allowHttp = false,
): () => Promise<string> {
  let found: string | undefined = configured;
  return async () => {
    if (found !== undefined) return found;
    const value = (await discover(issuer, timeout, allowHttp))[field];
    if (value === undefined)
      throw new FetchError(`${issuer}: discovery document has no "${field}"`);
    found = value;
    return value;
  };
}

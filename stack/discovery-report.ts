// What `npm start -- --issuer URL` tells a newcomer about their IdP before anything starts: the
// OpenID discovery document's issuer, key set and token endpoint, and whether it advertises what
// the gate can use (RFC 8707 resource indicators, DPoP, back-channel logout). Read-only and
// best effort: an IdP that cannot be reached is said, the verifier still decides at start.

const TIMEOUT_MS = 5_000;

type Metadata = Readonly<Record<string, unknown>>;

const yesNo = (advertised: boolean, yes: string, no: string) => (advertised ? yes : no);

/** The report's lines for `issuer`'s discovery document. */
export async function discoveryReport(issuer: string): Promise<string[]> {
  const url = `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
  let metadata: Metadata;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
    if (!response.ok) return [`discovery ${url}: HTTP ${response.status}`];
    const body: unknown = await response.json();
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      return [`discovery ${url}: not a JSON object`];
    metadata = body as Metadata;
  } catch (error) {
    return [`discovery ${url}: ${(error as Error).message}`];
  }
  return describeMetadata(issuer, metadata);
}

/** The lines for a fetched discovery document (pure, for tests). */
export function describeMetadata(issuer: string, metadata: Metadata): string[] {
  const text = (name: string) =>
    typeof metadata[name] === 'string' ? metadata[name] : '(not given)';
  const list = (name: string) =>
    Array.isArray(metadata[name]) ? (metadata[name] as unknown[]).map(String) : [];
  const dpop = list('dpop_signing_alg_values_supported');
  const matches = metadata.issuer === issuer;
  return [
    `issuer          ${text('issuer')}${matches ? '' : `  (differs from --issuer ${issuer}: tokens will be refused)`}`,
    `JWKS            ${text('jwks_uri')}`,
    `token endpoint  ${text('token_endpoint')}`,
    `RFC 8707        ${yesNo(
      metadata.resource_indicators_supported === true,
      'resource indicators advertised',
      'resource indicators not advertised (no standard metadata says so; many IdPs take `resource` anyway)',
    )}`,
    `DPoP            ${yesNo(dpop.length > 0, `advertised (${dpop.join(', ')})`, 'not advertised')}`,
    `back-channel    ${yesNo(
      metadata.backchannel_logout_supported === true,
      'logout advertised',
      'logout not advertised',
    )}`,
  ];
}

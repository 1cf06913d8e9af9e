// Token exchange (RFC 8693) on the suites' node-oidc-provider: one confidential client may trade
// a user's access token (an RFC 9068 JWT of this provider, checked against its own keys) for an
// opaque token of the provider naming the same subject and the audience asked for. Audience
// `forbidden-api` is refused (`invalid_target`), so a suite can see the gate's refusal path.
import { createLocalJWKSet, jwtVerify, type JWK } from 'jose';
import Provider, { errors, type ClientMetadata, type KoaContextWithOIDC } from 'oidc-provider';

export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
/** The audience the provider never exchanges for. */
export const REFUSED_AUDIENCE = 'forbidden-api';

/** The exchanging client: client_secret_basic with `${clientId}-secret`, this grant only. */
export function exchangeClient(clientId: string): ClientMetadata {
  return {
    client_id: clientId,
    client_secret: `${clientId}-secret`,
    grant_types: [TOKEN_EXCHANGE_GRANT],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_basic',
    // The provider's keys are P-256 only.
    id_token_signed_response_alg: 'ES256',
  };
}

/** Registers the grant; `signingKeys` gives the provider's current private JWKs (public parts used). */
export function registerTokenExchange(provider: Provider, signingKeys: () => JWK[]): void {
  async function exchange(ctx: KoaContextWithOIDC): Promise<void> {
    const client = ctx.oidc.client;
    if (client === undefined) throw new errors.InvalidClient('client not authenticated');
    const params = ctx.oidc.params as Record<string, string | string[] | undefined>;
    if (params.subject_token_type !== ACCESS_TOKEN_TYPE)
      throw new errors.InvalidGrant('subject token type not supported');
    const publicKeys = signingKeys().map(({ d: _d, ...publicPart }) => publicPart as JWK);
    const subject = await jwtVerify(
      String(params.subject_token),
      createLocalJWKSet({ keys: publicKeys }),
      { issuer: provider.issuer },
    ).catch(() => {
      throw new errors.InvalidGrant('subject token not recognised');
    });
    const audience = [params.audience ?? []].flat();
    if (audience.includes(REFUSED_AUDIENCE)) throw new errors.InvalidTarget('audience not allowed');
    const accountId = String(subject.payload.sub ?? subject.payload.client_id);
    const token = new provider.AccessToken({
      accountId,
      client,
      aud: audience,
      gty: 'token_exchange',
      grantId: 'exchange',
    });
    ctx.body = {
      access_token: await token.save(),
      issued_token_type: ACCESS_TOKEN_TYPE,
      token_type: 'Bearer',
      expires_in: token.expiration,
    };
  }
  provider.registerGrantType(
    TOKEN_EXCHANGE_GRANT,
    exchange,
    ['audience', 'resource', 'scope', 'subject_token', 'subject_token_type'],
    ['audience', 'resource'],
  );
}

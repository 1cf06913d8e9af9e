// `token-exchange`: OAuth 2.0 Token Exchange (RFC 8693) at the caller's issuer: the caller's
// access token is the `subject_token`, the entry names `audience` / `resource` / `scope`, and the
// gate authenticates as its own client (`client_secret_basic` or `private_key_jwt`, RFC 7523).
// oauth4webapi makes the request and checks the answer; the issued token is the value.

import { webcrypto } from 'node:crypto';
import type * as OAuth from 'oauth4webapi';
import type { EntryOf } from '../entry-schema.js';
import { asymmetricKey } from '../jws-key.js';
import { createKeyFile, parseTextSecret } from '../key-file.js';
import { expiryFor } from '../lifetime.js';
import { MintError } from '../mint-error.js';
import type { MintContext, Minter } from '../types.js';

const grantType = 'urn:ietf:params:oauth:grant-type:token-exchange';
const accessTokenType = 'urn:ietf:params:oauth:token-type:access_token';
/** An IdP that does not answer in this time fails the mint rather than hold the request. */
const timeoutMs = 5000;

type Entry = EntryOf<'token-exchange'>;

let loaded: Promise<typeof OAuth> | undefined;
/** oauth4webapi, loaded by the first exchange: a host that mints no `token-exchange` value never holds it. */
const oauthLibrary = () => (loaded ??= import('oauth4webapi'));
type KeyAuth = Extract<Entry['clientAuth'], { method: 'private_key_jwt' }>;

export function createTokenExchangeMinter(entry: Entry, context: MintContext): Minter {
  const { tokenEndpoint } = context;
  if (tokenEndpoint === undefined) {
    throw new TypeError(
      '"token-exchange" needs the issuer\'s token endpoint (context.tokenEndpoint)',
    );
  }
  const clientAuth = clientAuthentication(entry.clientAuth);
  const client: OAuth.Client = { client_id: entry.clientId };
  const fixed = new URLSearchParams({ subject_token_type: accessTokenType });
  for (const audience of [entry.audience ?? []].flat()) fixed.append('audience', audience);
  for (const resource of [entry.resource ?? []].flat()) fixed.append('resource', resource);
  if (entry.scope !== undefined) fixed.set('scope', entry.scope);

  return {
    kind: 'token-exchange',
    async mint(caller, now) {
      const ceiling = expiryFor(caller, now, entry.ttlSeconds);
      const oauth = await oauthLibrary();
      const auth = await clientAuth();
      let endpoint: URL;
      try {
        endpoint = new URL(await tokenEndpoint());
      } catch {
        throw new MintError('exchange_failed', "the issuer's token endpoint is unknown");
      }
      const as: OAuth.AuthorizationServer = { issuer: caller.iss, token_endpoint: endpoint.href };
      const parameters = new URLSearchParams(fixed);
      parameters.set('subject_token', caller.token);
      let result: OAuth.TokenEndpointResponse;
      try {
        const response = await oauth.genericTokenEndpointRequest(
          as,
          client,
          auth,
          grantType,
          parameters,
          {
            [oauth.customFetch]: context.fetch,
            [oauth.allowInsecureRequests]: isLoopback(endpoint),
            signal: AbortSignal.timeout(timeoutMs),
          },
        );
        result = await oauth.processGenericTokenEndpointResponse(as, client, response);
      } catch (error) {
        if (error instanceof oauth.WWWAuthenticateChallengeError) {
          // A 401 with a challenge: the IdP did not accept the gate's client authentication.
          const code = error.cause[0]?.parameters.error;
          throw new MintError(
            'exchange_refused',
            `the issuer refused the exchange: ${safeCode(code)}`,
          );
        }
        if (error instanceof oauth.ResponseBodyError) {
          // The IdP's error code only: its description may quote the request.
          throw new MintError(
            'exchange_refused',
            `the issuer refused the exchange: ${safeCode(error.error)}`,
          );
        }
        throw new MintError('exchange_failed', 'the token exchange did not complete');
      }
      const lifetime = result.expires_in;
      const expiresAt =
        typeof lifetime === 'number' && lifetime > 0
          ? Math.min(ceiling, Math.floor(now) + Math.floor(lifetime))
          : ceiling;
      return { value: result.access_token, expiresAt };
    },
  };
}

function clientAuthentication(auth: Entry['clientAuth']): () => Promise<OAuth.ClientAuth> {
  if (auth.method === 'client_secret_basic') {
    const secret = createKeyFile(
      auth.secretFile,
      'clientAuth.secretFile',
      parseTextSecret('clientAuth.secretFile'),
    );
    return async () => (await oauthLibrary()).ClientSecretBasic(secret.current());
  }
  const key = createKeyFile(auth.keyFile, 'clientAuth.keyFile', (bytes) => importOnce(bytes, auth));
  return async () => (await oauthLibrary()).PrivateKeyJwt(await key.current()());
}

/** Parses now (errors at start), imports into WebCrypto on first use, once per key version. */
function importOnce(bytes: Buffer, auth: KeyAuth): () => Promise<OAuth.PrivateKey> {
  const { privateKey, publicJwk } = asymmetricKey(bytes, auth.alg, 'clientAuth.keyFile', auth.kid);
  let imported: Promise<OAuth.PrivateKey> | undefined;
  return () => {
    imported ??= (async () => {
      const der = privateKey!.export({ format: 'der', type: 'pkcs8' });
      try {
        const key = await webcrypto.subtle.importKey(
          'pkcs8',
          der,
          importParameters(auth.alg),
          false,
          ['sign'],
        );
        return { key, kid: publicJwk!.kid };
      } finally {
        der.fill(0);
      }
    })();
    return imported;
  };
}

function importParameters(
  alg: KeyAuth['alg'],
): webcrypto.AlgorithmIdentifier | webcrypto.EcKeyImportParams | webcrypto.RsaHashedImportParams {
  switch (alg) {
    case 'ES256':
      return { name: 'ECDSA', namedCurve: 'P-256' };
    case 'RS256':
      return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
    case 'PS256':
      return { name: 'RSA-PSS', hash: 'SHA-256' };
    case 'EdDSA':
      return { name: 'Ed25519' };
  }
}

/** Plain HTTP only to the same machine (a local IdP); anything else must be HTTPS. */
function isLoopback(url: URL): boolean {
  return ['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname);
}

/** RFC 6749 error codes are short ASCII; anything else is not repeated. */
function safeCode(code: unknown): string {
  return typeof code === 'string' && /^[\x20-\x21\x23-\x5b\x5d-\x7e]{1,64}$/.test(code)
    ? code
    : 'unknown error';
}

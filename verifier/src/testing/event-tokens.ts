// Logout tokens (OIDC Back-Channel Logout 1.0) and Security Event Tokens (SSF SET profile) for
// tests, signed with the fixed test keys; every default can be replaced or removed (`undefined`).
import { randomUUID } from 'node:crypto';
import { importJWK, SignJWT } from 'jose';
import { ISSUER, PRIVATE_JWKS, type KeyName } from './fixtures.js';

export const LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';
export const CAEP_SESSION_REVOKED =
  'https://schemas.openid.net/secevent/caep/event-type/session-revoked';
export const CAEP_CREDENTIAL_CHANGE =
  'https://schemas.openid.net/secevent/caep/event-type/credential-change';
export const SSF_VERIFICATION = 'https://schemas.openid.net/secevent/ssf/event-type/verification';
export const SPA_CLIENT = 'spa-demo';
export const RECEIVER = 'https://gate.test/';

export interface EventTokenOptions {
  readonly key?: KeyName;
  /** Claims merged over the defaults; `undefined` removes one. */
  readonly claims?: Record<string, unknown>;
  /** Header members merged over `{ alg, kid, typ }`; `undefined` removes one. */
  readonly header?: Record<string, unknown>;
  /** Seconds since the epoch for `iat`. */
  readonly now?: number;
}

async function sign(
  defaults: Record<string, unknown>,
  typ: string,
  options: EventTokenOptions,
  fallbackKey: KeyName,
): Promise<string> {
  const jwk = PRIVATE_JWKS[options.key ?? fallbackKey];
  const claims: Record<string, unknown> = { ...defaults, ...options.claims };
  const header: Record<string, unknown> = { alg: jwk.alg, kid: jwk.kid, typ, ...options.header };
  for (const bag of [claims, header])
    for (const [name, value] of Object.entries(bag)) if (value === undefined) delete bag[name];
  return new SignJWT(claims)
    .setProtectedHeader(header as { alg: string })
    .sign(await importJWK(jwk, jwk.alg));
}

/** A logout token of the test issuer for `user-1`, addressed to the SPA's client id. */
export function mintLogoutToken(options: EventTokenOptions = {}): Promise<string> {
  const now = options.now ?? Math.floor(Date.now() / 1000);
  return sign(
    {
      iss: ISSUER,
      aud: SPA_CLIENT,
      iat: now,
      exp: now + 120,
      jti: randomUUID(),
      sub: 'user-1',
      events: { [LOGOUT_EVENT]: {} },
    },
    'logout+jwt',
    options,
    'rsaA',
  );
}

/** A SET of `transmitter` for this receiver: CAEP session-revoked of `user-1` at the test issuer. */
export function mintSet(transmitter: string, options: EventTokenOptions = {}): Promise<string> {
  const now = options.now ?? Math.floor(Date.now() / 1000);
  return sign(
    {
      iss: transmitter,
      aud: RECEIVER,
      iat: now,
      jti: randomUUID(),
      sub_id: { format: 'iss_sub', iss: ISSUER, sub: 'user-1' },
      events: { [CAEP_SESSION_REVOKED]: { event_timestamp: now } },
    },
    'secevent+jwt',
    options,
    'rsaB',
  );
}

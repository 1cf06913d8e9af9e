// DEV ONLY. The dev IdP's side of OIDC Back-Channel Logout 1.0: when a user signs out (the SPA's
// RP-initiated logout at /endsession, or POST /dev/sign-out for "signed out elsewhere"), a logout
// token signed with the IdP's active key is POSTed to every configured back-channel logout URI
// before the browser is sent back, so the gate refuses the user's tokens by the time it returns.
import { randomUUID } from 'node:crypto';
import { createLocalJWKSet, jwtVerify } from 'jose';
import type { IdpConfig } from './config.js';
import type { DevIssuer } from './issuer.js';
import type { IdpState } from './state.js';

export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

export interface SignOut {
  readonly sub: string;
  readonly sid?: string | undefined;
  /** The client the logout token is addressed to (`aud`). */
  readonly clientId: string;
}

export interface Delivery {
  readonly uri: string;
  readonly status: number | 'unreachable';
}

export function createLogoutSender(deps: {
  config: IdpConfig;
  state: IdpState;
  issuer: DevIssuer;
}) {
  const { config, state, issuer } = deps;

  async function logoutToken(signOut: SignOut): Promise<string> {
    return issuer.buildToken({
      expiresIn: 120,
      scopesOrTransform: (header, payload) => {
        header.typ = 'logout+jwt';
        Object.assign(payload, {
          aud: signOut.clientId,
          sub: signOut.sub,
          jti: randomUUID(),
          events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
        });
        if (signOut.sid !== undefined) payload.sid = signOut.sid;
        delete (payload as { nbf?: number }).nbf;
      },
    });
  }

  /** Sends one logout token to every configured receiver; never throws. */
  async function send(signOut: SignOut): Promise<Delivery[]> {
    const token = await logoutToken(signOut);
    return Promise.all(
      config.backchannelLogoutUris.map(async (uri): Promise<Delivery> => {
        try {
          const response = await fetch(uri, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({ logout_token: token }).toString(),
            signal: AbortSignal.timeout(5000),
          });
          await response.body?.cancel();
          state.counters.logoutTokensSent += 1;
          return { uri, status: response.status };
        } catch {
          return { uri, status: 'unreachable' };
        }
      }),
    );
  }

  /**
   * The subject of an `id_token_hint` this IdP issued (signature checked against its own keys);
   * undefined for anything else, so a forged hint cannot sign another user out.
   */
  async function subjectOfHint(hint: string | null): Promise<SignOut | undefined> {
    if (!hint) return undefined;
    try {
      const keys = createLocalJWKSet({ keys: issuer.keys.toJSON(false) });
      const { payload } = await jwtVerify(hint, keys, { issuer: issuer.url });
      const aud = Array.isArray(payload.aud) ? payload.aud[0] : payload.aud;
      if (typeof payload.sub !== 'string' || typeof aud !== 'string') return undefined;
      const sid = typeof payload.sid === 'string' ? payload.sid : undefined;
      return { sub: payload.sub, sid, clientId: aud };
    } catch {
      return undefined;
    }
  }

  return { send, subjectOfHint };
}

export type LogoutSender = ReturnType<typeof createLogoutSender>;

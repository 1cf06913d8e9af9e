// The dev IdP as one HTTP server: oauth2-mock-server's OIDC endpoints behind a thin front that
// counts hits, simulates outages, checks /authorize requests and mounts the dev-only control API.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OAuth2Service } from 'oauth2-mock-server';
import { createCodeBook } from './authorization-codes.js';
import { createLogoutSender } from './backchannel-logout.js';
import { createSsfTransmitter } from './ssf-transmitter.js';
import type { IdpConfig } from './config.js';
import { CONTROL_PREFIX, createControlApi, send } from './control-api.js';
import { createTokenProofReader } from './dpop.js';
import { DevIssuer } from './issuer.js';
import { createIdpState, type IdpState } from './state.js';
import { applyTokenRules } from './token-rules.js';

export interface Idp {
  /** The issuer URL tokens carry in `iss` (also the base URL of every endpoint). */
  readonly issuer: string;
  readonly port: number;
  readonly state: IdpState;
  readonly keys: DevIssuer;
  close(): Promise<void>;
}

/** Generates keys, binds the port and resolves once the IdP answers requests. */
export async function startIdp(config: IdpConfig): Promise<Idp> {
  const issuer = await DevIssuer.create();
  const service = new OAuth2Service(issuer);
  const state = createIdpState();
  const codes = createCodeBook(config);
  // Token requests whose DPoP proof checked out, with the proof key's thumbprint.
  const boundKeys = new WeakMap<IncomingMessage, string>();
  const readTokenProof = createTokenProofReader();
  applyTokenRules(service, { config, state, codes, boundKeys });
  const logouts = createLogoutSender({ config, state, issuer });
  const ssf = createSsfTransmitter({ config, issuer });
  const control = config.control
    ? createControlApi({ config, state, issuer, logouts, ssf })
    : undefined;
  const oidc = service.requestHandler;

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://idp.invalid');
    const path = url.pathname;
    if (path === '/readyz' || path === '/healthz') {
      return send(res, state.outage === 'up' ? 200 : 503, {
        status: state.outage === 'up' ? 'ok' : 'outage',
      });
    }
    if (path.startsWith(CONTROL_PREFIX)) {
      if (!control) return send(res, 404, { error: 'not_found' });
      void control(req, res, path);
      return;
    }
    if (state.outage === 'reset') {
      req.socket.destroy();
      return;
    }
    if (state.outage === 'error') {
      res.setHeader('retry-after', '1');
      return send(res, 503, { error: 'temporarily_unavailable' });
    }
    if (path === '/.well-known/ssf-configuration') return send(res, 200, ssf.configuration());
    if (path === '/ssf/poll' && req.method === 'POST') {
      void ssf.poll(req, res);
      return;
    }
    if (path === '/.well-known/openid-configuration') state.counters.discoveryFetches += 1;
    else if (path === '/jwks') state.counters.jwksFetches += 1;
    else if (path === '/authorize') {
      state.counters.authorizeRequests += 1;
      const check = codes.checkAuthorizeRequest(url.searchParams);
      if (!check.ok)
        return send(res, 400, { error: check.error, error_description: check.description });
    } else if (path === '/endsession') {
      // RP-initiated logout: the gate hears of it (back-channel logout) before the browser returns.
      void logouts.subjectOfHint(url.searchParams.get('id_token_hint')).then(async (signOut) => {
        if (signOut !== undefined) await logouts.send(signOut);
        oidc(req, res);
      });
      return;
    } else if (path === '/token' && req.method === 'POST' && req.headers.dpop !== undefined) {
      void readTokenProof(req, `${issuer.url}/token`).then((proof) => {
        if (!proof.ok) {
          state.counters.tokenErrors += 1;
          return send(res, 400, {
            error: 'invalid_dpop_proof',
            error_description: proof.description,
          });
        }
        boundKeys.set(req, proof.jkt);
        oidc(req, res);
      });
      return;
    }
    oidc(req, res);
  }

  const server = createServer(handle);
  // Keep-alive sockets from the verifier would otherwise hold close() open until they time out.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  issuer.url = config.issuer ?? `http://127.0.0.1:${port}`;

  return {
    issuer: issuer.url,
    port,
    state,
    keys: issuer,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

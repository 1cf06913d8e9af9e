// DEV ONLY. The control API tests use to steer the dev IdP: rotate keys, mint tokens with chosen
// claims, queue claims for the next tokens, read hit counters, simulate an outage. It is mounted
// under /dev/ and switched off with IDP_DEV_CONTROL=off for production-like runs.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { LogoutSender } from './backchannel-logout.js';
import type { IdpConfig } from './config.js';
import { CAEP_EVENTS, type CaepEvent, type SsfTransmitter } from './ssf-transmitter.js';
import { KEY_ALGS, type DevIssuer, type KeyAlg } from './issuer.js';
import { OUTAGE_MODES, type IdpState, type OutageMode } from './state.js';
import { applyClaims } from './token-rules.js';

export const CONTROL_PREFIX = '/dev/';
const MAX_BODY_BYTES = 64 * 1024;

/** A request to POST /dev/token: a token signed by the IdP's keys, shaped as the caller says. */
export interface MintRequest {
  clientId?: string;
  scope?: string;
  /** Claims merged over the defaults; `null` removes one. */
  claims?: Record<string, unknown>;
  /** Protected-header members merged over the defaults (e.g. `{ typ: 'JWT' }`). */
  header?: Record<string, unknown>;
  /** Sign with the published key of this algorithm instead of the active one. */
  alg?: KeyAlg;
  expiresIn?: number;
}

type Handler = (body: Record<string, unknown>) => unknown;

/** Builds the /dev/* handler; answers JSON, 404 for unknown routes, 400 for bad input. */
export function createControlApi(deps: {
  config: IdpConfig;
  state: IdpState;
  issuer: DevIssuer;
  logouts: LogoutSender;
  ssf: SsfTransmitter;
}) {
  const { config, state, issuer, logouts, ssf } = deps;

  const routes: Record<string, Handler> = {
    'GET /dev/stats': () => ({ ...state.counters, outage: state.outage }),
    'POST /dev/stats/reset': () => {
      state.resetCounters();
      return { ...state.counters };
    },
    'GET /dev/keys': () => ({ active: issuer.activeKid, keys: issuer.listKeys() }),
    'POST /dev/rotate': async (body) => {
      const alg = body.alg ?? 'RS256';
      if (!KEY_ALGS.includes(alg as KeyAlg))
        throw new BadRequest(`"alg" must be one of ${KEY_ALGS.join(', ')}`);
      if (body.keepPrevious !== undefined && typeof body.keepPrevious !== 'boolean') {
        throw new BadRequest('"keepPrevious" must be a boolean');
      }
      const rotated = await issuer.rotate({
        alg: alg as KeyAlg,
        keepPrevious: body.keepPrevious ?? true,
      });
      return { ...rotated, keys: issuer.listKeys() };
    },
    'POST /dev/token': async (body) => ({ access_token: await mint(body) }),
    'POST /dev/next-token-claims': (body) => {
      const claims = body.claims;
      const count = body.count ?? 1;
      if (!isObject(claims)) throw new BadRequest('"claims" must be an object');
      if (!Number.isInteger(count) || (count as number) < 1 || (count as number) > 1000) {
        throw new BadRequest('"count" must be an integer from 1 to 1000');
      }
      for (let i = 0; i < (count as number); i++) state.nextClaims.push({ ...claims });
      return { queued: state.nextClaims.length };
    },
    'DELETE /dev/next-token-claims': () => {
      state.nextClaims.length = 0;
      return { queued: 0 };
    },
    // "Signed out elsewhere": a back-channel logout for `sub` (and `sid`) to every configured URI.
    'POST /dev/sign-out': async (body) => {
      const sub = body.sub ?? config.userSub;
      const clientId = body.clientId ?? config.clients[0];
      if (typeof sub !== 'string' || sub.length === 0)
        throw new BadRequest('"sub" must be a string');
      if (typeof clientId !== 'string') throw new BadRequest('"clientId" must be a string');
      if (body.sid !== undefined && typeof body.sid !== 'string')
        throw new BadRequest('"sid" must be a string');
      return {
        delivered: await logouts.send({ sub, sid: body.sid, clientId }),
      };
    },
    // A CAEP event for a user (`sub`) or an address (`email`), pushed and queued for polling.
    'POST /dev/ssf/events': (body) => {
      const event = body.event ?? 'session-revoked';
      if (!CAEP_EVENTS.includes(event as CaepEvent))
        throw new BadRequest(`"event" must be one of ${CAEP_EVENTS.join(', ')}`);
      for (const field of ['sub', 'email'] as const)
        if (body[field] !== undefined && typeof body[field] !== 'string')
          throw new BadRequest(`"${field}" must be a string`);
      if (body.delivery !== undefined && body.delivery !== 'push' && body.delivery !== 'poll')
        throw new BadRequest('"delivery" must be push or poll');
      return ssf.raise({
        event: event as CaepEvent,
        delivery: body.delivery,
        sub: body.sub as string | undefined,
        email: body.email as string | undefined,
      });
    },
    'GET /dev/ssf/stats': () => ({ pending: ssf.pending, acknowledged: ssf.acknowledged }),
    'POST /dev/outage': (body) => {
      if (!OUTAGE_MODES.includes(body.mode as OutageMode)) {
        throw new BadRequest(`"mode" must be one of ${OUTAGE_MODES.join(', ')}`);
      }
      state.outage = body.mode as OutageMode;
      return { outage: state.outage };
    },
  };

  async function mint(request: MintRequest): Promise<string> {
    const clientId = request.clientId ?? config.clients[0] ?? 'spa-demo';
    if (typeof clientId !== 'string') throw new BadRequest('"clientId" must be a string');
    if (request.claims !== undefined && !isObject(request.claims))
      throw new BadRequest('"claims" must be an object');
    if (request.header !== undefined && !isObject(request.header))
      throw new BadRequest('"header" must be an object');
    const expiresIn = request.expiresIn ?? config.tokenTtlSeconds;
    if (!Number.isInteger(expiresIn)) throw new BadRequest('"expiresIn" must be an integer');
    const kid = request.alg === undefined ? issuer.activeKid : issuer.kidFor(request.alg);
    if (kid === undefined)
      throw new BadRequest(`no published key for "alg" ${String(request.alg)}`);
    const scope = request.scope;
    return issuer.buildToken({
      kid,
      expiresIn,
      scopesOrTransform: (header, payload) => {
        header.typ = 'at+jwt';
        Object.assign(payload, {
          aud: config.audience,
          sub: clientId,
          client_id: clientId,
          azp: clientId,
          jti: randomUUID(),
        });
        if (scope !== undefined) payload.scope = scope;
        if (request.claims) applyClaims(payload, request.claims);
        if (request.header) applyClaims(header, request.header);
      },
    });
  }

  return async function handleControl(
    req: IncomingMessage,
    res: ServerResponse,
    pathname: string,
  ): Promise<void> {
    const route = routes[`${req.method ?? 'GET'} ${pathname}`];
    if (!route) return send(res, 404, { error: 'not_found' });
    try {
      const body = req.method === 'POST' ? await readJson(req) : {};
      send(res, 200, (await route(body)) ?? {});
    } catch (error) {
      if (error instanceof BadRequest)
        send(res, 400, { error: 'invalid_request', error_description: error.message });
      else send(res, 500, { error: 'server_error' });
    }
  };
}

class BadRequest extends Error {}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new BadRequest('body too large');
    chunks.push(chunk as Buffer);
  }
  if (size === 0) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new BadRequest('body must be JSON');
  }
  if (!isObject(parsed)) throw new BadRequest('body must be a JSON object');
  return parsed;
}

export function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  });
  res.end(text);
}

// DEV ONLY. The dev IdP as a Shared Signals transmitter (SSF 1.0): discovery at
// /.well-known/ssf-configuration (its own `jwks_uri`), CAEP events as SETs signed with its active
// key, pushed (RFC 8935) to every configured receiver and queued for polling (RFC 8936) at
// POST /ssf/poll, where receivers acknowledge what they processed. Events are raised through the
// control API (POST /dev/ssf/events), as an admin console would.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { IdpConfig } from './config.js';
import type { DevIssuer } from './issuer.js';

const CAEP = 'https://schemas.openid.net/secevent/caep/event-type/';
export const CAEP_EVENTS = ['session-revoked', 'credential-change'] as const;
export type CaepEvent = (typeof CAEP_EVENTS)[number];
const MAX_POLL_BODY_BYTES = 64 * 1024;

export interface RaisedEvent {
  readonly event: CaepEvent;
  /** `iss_sub` subject of this IdP, or an `email` subject when `email` is given. */
  readonly sub?: string | undefined;
  readonly email?: string | undefined;
  /** `poll` only queues it; the default pushes too (and drops it from the queue once taken). */
  readonly delivery?: 'push' | 'poll' | undefined;
}

export function createSsfTransmitter(deps: { config: IdpConfig; issuer: DevIssuer }) {
  const { config, issuer } = deps;
  const queue = new Map<string, string>();
  const acknowledged: string[] = [];

  async function sign(raised: RaisedEvent): Promise<{ jti: string; set: string }> {
    const jti = randomUUID();
    const seconds = Math.floor(Date.now() / 1000);
    const set = await issuer.buildToken({
      scopesOrTransform: (header, payload) => {
        header.typ = 'secevent+jwt';
        const claims = payload as Record<string, unknown>;
        // The SET profile: no JWT `sub`, no `exp`; the subject is `sub_id`.
        for (const name of ['exp', 'nbf', 'sub']) delete claims[name];
        Object.assign(claims, {
          aud: config.ssfAudience,
          jti,
          sub_id:
            raised.email === undefined
              ? { format: 'iss_sub', iss: issuer.url, sub: raised.sub ?? config.userSub }
              : { format: 'email', email: raised.email },
          events: {
            [`${CAEP}${raised.event}`]:
              raised.event === 'credential-change'
                ? { credential_type: 'password', change_type: 'update', event_timestamp: seconds }
                : { event_timestamp: seconds },
          },
        });
      },
    });
    return { jti, set };
  }

  /** Signs the event, queues it for polling and pushes it to every configured receiver. */
  async function raise(raised: RaisedEvent) {
    const { jti, set } = await sign(raised);
    queue.set(jti, set);
    const receivers = raised.delivery === 'poll' ? [] : config.ssfPushUris;
    const pushed = await Promise.all(
      receivers.map(async (uri) => {
        try {
          const response = await fetch(uri, {
            method: 'POST',
            headers: { 'content-type': 'application/secevent+jwt', accept: 'application/json' },
            body: set,
            signal: AbortSignal.timeout(5000),
          });
          await response.body?.cancel();
          // A receiver that took it by push does not need it by poll.
          if (response.status === 202) queue.delete(jti);
          return { uri, status: response.status };
        } catch {
          return { uri, status: 'unreachable' as const };
        }
      }),
    );
    return { jti, pushed, queued: queue.has(jti) };
  }

  function configuration() {
    return {
      spec_version: '1_0',
      issuer: issuer.url,
      jwks_uri: `${issuer.url}/jwks`,
      delivery_methods_supported: ['urn:ietf:rfc:8935', 'urn:ietf:rfc:8936'],
      events_supported: CAEP_EVENTS.map((event) => `${CAEP}${event}`),
    };
  }

  /** POST /ssf/poll: acknowledgements and errors in, up to `maxEvents` queued SETs out. */
  async function poll(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > MAX_POLL_BODY_BYTES) return reply(res, 400, { err: 'invalid_request' });
      chunks.push(chunk as Buffer);
    }
    let body: { ack?: unknown; setErrs?: unknown; maxEvents?: unknown };
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as typeof body;
    } catch {
      return reply(res, 400, { err: 'invalid_request', description: 'the body is not JSON' });
    }
    for (const jti of Array.isArray(body.ack) ? body.ack : [])
      if (typeof jti === 'string' && queue.delete(jti)) acknowledged.push(jti);
    if (body.setErrs !== null && typeof body.setErrs === 'object')
      for (const jti of Object.keys(body.setErrs)) queue.delete(jti);
    const max = typeof body.maxEvents === 'number' && body.maxEvents >= 0 ? body.maxEvents : 10;
    const sets = Object.fromEntries([...queue].slice(0, max));
    reply(res, 200, { sets, moreAvailable: queue.size > max });
  }

  return {
    raise,
    configuration,
    poll,
    get pending() {
      return queue.size;
    },
    get acknowledged() {
      return acknowledged.length;
    },
  };
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

export type SsfTransmitter = ReturnType<typeof createSsfTransmitter>;

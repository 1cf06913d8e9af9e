// A Shared Signals transmitter for tests, as the SSF 1.0 spec describes one: its own keys (rsaB),
// discovery at /.well-known/ssf-configuration, push (RFC 8935: one SET per POST to the receiver)
// and poll (RFC 8936: a queue the receiver drains and acknowledges). Okta, Keycloak and the other
// transmitters cannot run here; this one stands in for them.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { publicJwk } from './fixtures.js';

export interface SsfTransmitter {
  readonly issuer: string;
  readonly pollUrl: string;
  /** Queues a SET for the poll endpoint (keyed by its `jti`). */
  enqueue(jti: string, set: string): void;
  /** `jti`s the receiver acknowledged, in order. */
  readonly acked: readonly string[];
  /** `setErrs` the receiver reported. */
  readonly errors: Readonly<Record<string, { err: string; description: string }>>;
  /** `jti`s still waiting for an acknowledgement. */
  readonly pending: readonly string[];
  /** Poll requests seen. */
  readonly polls: number;
  /** While failing, the poll endpoint answers 503. */
  setFailing(failing: boolean): void;
  /** POSTs one SET to a push endpoint; resolves with its status and body. */
  push(
    endpoint: string,
    set: string,
    contentType?: string,
  ): Promise<{ status: number; body: string }>;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startSsfTransmitter(): Promise<SsfTransmitter> {
  const queue = new Map<string, string>();
  const acked: string[] = [];
  const errors: Record<string, { err: string; description: string }> = {};
  let polls = 0;
  let failing = false;
  let issuer = '';
  const server: Server = createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.url === '/.well-known/ssf-configuration')
      return send(200, {
        issuer,
        jwks_uri: `${issuer}/jwks`,
        delivery_methods_supported: ['urn:ietf:rfc:8935', 'urn:ietf:rfc:8936'],
        spec_version: '1_0',
      });
    if (req.url === '/jwks') return send(200, { keys: [publicJwk('rsaB')] });
    if (req.url === '/poll' && req.method === 'POST') {
      polls++;
      if (failing) return send(503, { error: 'temporarily_unavailable' });
      void readBody(req).then((text) => {
        const body = JSON.parse(text) as {
          ack?: string[];
          setErrs?: Record<string, { err: string; description: string }>;
          maxEvents?: number;
        };
        for (const jti of body.ack ?? []) if (queue.delete(jti)) acked.push(jti);
        for (const [jti, error] of Object.entries(body.setErrs ?? {}))
          if (queue.delete(jti)) errors[jti] = error;
        const max = body.maxEvents ?? 10;
        const sets = Object.fromEntries([...queue].slice(0, max));
        send(200, { sets, moreAvailable: queue.size > max });
      });
      return;
    }
    send(404, { error: 'not_found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  issuer = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return {
    issuer,
    pollUrl: `${issuer}/poll`,
    enqueue: (jti, set) => void queue.set(jti, set),
    acked,
    errors,
    get pending() {
      return [...queue.keys()];
    },
    get polls() {
      return polls;
    },
    setFailing: (value) => void (failing = value),
    async push(endpoint, set, contentType = 'application/secevent+jwt') {
      const response = await fetch(endpoint, {
        method: 'POST',
        headers: { 'content-type': contentType, accept: 'application/json' },
        body: set,
      });
      return { status: response.status, body: await response.text() };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

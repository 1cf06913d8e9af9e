// The node:http adapter: the fallback when the uWS addon cannot load (musl, another Node ABI), and
// an explicit choice with VERIFIER_TRANSPORT=node. Same routes, same bytes on the wire.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { VerifyRequest } from '../decision/authorize.js';
import type { Decision } from '../decision/decision.js';
import { MAX_RECEIVER_BODY_BYTES, type Answer } from '../decision/plugins.js';
import { REQUEST_HEADERS } from './contract.js';
import type { Routes } from './routes.js';
import { drain, listenNodeServer, type Transport } from './transport.js';
import { renderDecision } from './verify-answer.js';

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value || undefined;
}

export function createNodeTransport(routes: Routes): Transport {
  let inFlight = 0;

  function writeDecision(res: ServerResponse, decision: Decision): void {
    const answer = renderDecision(decision);
    const headers = answer.headers.flat();
    // Same bytes as the uWS adapter: 401/403 say `Content-Length: 0` rather than chunking nothing.
    if (answer.status !== 204) headers.push('Content-Length', '0');
    res.writeHead(answer.status, headers);
    res.end();
  }

  function writeAnswer(res: ServerResponse, answer: Answer): void {
    res.writeHead(answer.status, answer.headers.flat());
    res.end(answer.body);
  }

  /** A revocation receiver: POST only, the body read up to its cap. */
  function receive(req: IncomingMessage, res: ServerResponse, path: string): void {
    const receiver = routes.receivers.get(path)!;
    if (req.method !== 'POST') return writeAnswer(res, routes.methodNotAllowed());
    const chunks: Buffer[] = [];
    let size = 0;
    inFlight++;
    let done = false;
    const finish = (answer: Answer) => {
      if (done) return;
      done = true;
      inFlight--;
      if (!res.destroyed) writeAnswer(res, answer);
    };
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_RECEIVER_BODY_BYTES) {
        finish(routes.bodyTooLarge());
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('error', () => finish(routes.bodyTooLarge()));
    req.on('end', () => {
      if (done) return;
      const body = Buffer.concat(chunks).toString('utf8');
      void receiver({ contentType: single(req.headers['content-type']), body }).then(finish);
    });
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    if (routes.receivers.has(path)) return receive(req, res, path);
    switch (path) {
      case '/verify': {
        const query = q === -1 ? undefined : new URLSearchParams(url.slice(q + 1));
        const request: { -readonly [K in keyof VerifyRequest]: VerifyRequest[K] } = {
          policy: query?.get('policy') || undefined,
        };
        for (const { field, key } of REQUEST_HEADERS) request[field] = single(req.headers[key]);
        inFlight++;
        void routes.verify(request).then((decision) => {
          inFlight--;
          if (!res.destroyed) writeDecision(res, decision);
        });
        return;
      }
      case '/healthz':
        return writeAnswer(res, routes.healthz());
      case '/readyz':
        return writeAnswer(res, routes.readyz());
      case '/metrics':
        void routes.metrics().then((answer) => writeAnswer(res, answer));
        return;
      default:
        return writeAnswer(res, routes.notFound());
    }
  }

  const server = createServer({ keepAliveTimeout: 65_000 }, handle);

  return {
    name: 'node',
    listen(listen) {
      return listenNodeServer(server, listen);
    },
    async close(graceMs) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await drain(() => inFlight, graceMs);
      server.closeAllConnections();
      await closed;
    },
  };
}

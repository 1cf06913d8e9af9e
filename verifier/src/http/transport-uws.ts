// The uWebSockets.js adapter: the only code that touches uWS `req`/`res`. Headers are copied
// before anything can yield (uWS invalidates `req` after the handler returns), `onAborted` is set
// before waiting, and the answer is written inside `cork`.
import type { HttpRequest, HttpResponse, us_listen_socket } from 'uWebSockets.js';
import type { VerifyRequest } from '../decision/authorize.js';
import type { Decision } from '../decision/decision.js';
import { MAX_RECEIVER_BODY_BYTES, type Answer } from '../decision/plugins.js';
import { REQUEST_HEADERS } from './contract.js';
import type { Routes } from './routes.js';
import { STATUS_TEXT } from './routes.js';
import {
  describe,
  drain,
  removeStaleSocket,
  shareSocket,
  type Transport,
  type UwsModule,
} from './transport.js';
import { renderDecision } from './verify-answer.js';

export function createUwsTransport(uws: UwsModule, routes: Routes): Transport {
  const app = uws.App();
  let listenSocket: us_listen_socket | undefined;
  let inFlight = 0;

  function writeDecision(res: HttpResponse, decision: Decision): void {
    const answer = renderDecision(decision);
    res.writeStatus(STATUS_TEXT[answer.status]!);
    for (const [name, value] of answer.headers) res.writeHeader(name, value);
    // 204 has no body by definition; 401/403 need `Content-Length: 0` or keep-alive clients wait.
    if (answer.status === 204) res.endWithoutBody();
    else res.end();
  }

  function writeAnswer(res: HttpResponse, answer: Answer): void {
    res.writeStatus(STATUS_TEXT[answer.status] ?? String(answer.status));
    for (const [name, value] of answer.headers) res.writeHeader(name, value);
    res.end(answer.body);
  }

  // auth_request subrequests keep the client's method, so /verify answers every method.
  app.any('/verify', (res: HttpResponse, req: HttpRequest) => {
    const request: { -readonly [K in keyof VerifyRequest]: VerifyRequest[K] } = {
      policy: req.getQuery('policy') || undefined,
    };
    for (const { field, key } of REQUEST_HEADERS) request[field] = req.getHeader(key) || undefined;
    let aborted = false;
    inFlight++;
    res.onAborted(() => {
      aborted = true;
    });
    void routes.verify(request).then((decision) => {
      inFlight--;
      if (!aborted) res.cork(() => writeDecision(res, decision));
    });
  });
  // Revocation receivers: the body arrives in chunks uWS reuses, so each is copied at once.
  for (const [path, receiver] of routes.receivers) {
    app.post(path, (res: HttpResponse, req: HttpRequest) => {
      const contentType = req.getHeader('content-type') || undefined;
      let aborted = false;
      let refused = false;
      const chunks: Buffer[] = [];
      let size = 0;
      inFlight++;
      res.onAborted(() => {
        aborted = true;
        if (!refused) inFlight--;
        refused = true;
      });
      res.onData((chunk, isLast) => {
        if (refused) return;
        size += chunk.byteLength;
        if (size > MAX_RECEIVER_BODY_BYTES) {
          refused = true;
          inFlight--;
          res.cork(() => writeAnswer(res, routes.bodyTooLarge()));
          return;
        }
        chunks.push(Buffer.from(chunk.slice(0)));
        if (!isLast) return;
        const body = Buffer.concat(chunks).toString('utf8');
        void receiver({ contentType, body }).then((answer) => {
          if (refused) return;
          inFlight--;
          refused = true;
          if (!aborted) res.cork(() => writeAnswer(res, answer));
        });
      });
    });
    app.any(path, (res) => writeAnswer(res, routes.methodNotAllowed()));
  }
  app.get('/healthz', (res) => writeAnswer(res, routes.healthz()));
  app.get('/readyz', (res) => writeAnswer(res, routes.readyz()));
  app.get('/metrics', (res) => {
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    void routes.metrics().then((answer) => {
      if (!aborted) res.cork(() => writeAnswer(res, answer));
    });
  });
  app.any('/*', (res) => writeAnswer(res, routes.notFound()));

  return {
    name: 'uws',
    listen(listen) {
      return new Promise((resolve, reject) => {
        const done = (socket: us_listen_socket | false) => {
          if (!socket) {
            reject(new Error(`cannot listen on ${describe(listen)}`));
            return;
          }
          listenSocket = socket;
          if (listen.kind === 'unix') shareSocket(listen.path);
          resolve(listen.kind === 'tcp' ? uws.us_socket_local_port(socket) : 0);
        };
        if (listen.kind === 'unix') {
          removeStaleSocket(listen.path);
          app.listen_unix(done, listen.path);
        } else {
          app.listen(listen.host, listen.port, done);
        }
      });
    },
    async close(graceMs) {
      if (listenSocket) uws.us_listen_socket_close(listenSocket);
      listenSocket = undefined;
      await drain(() => inFlight, graceMs);
    },
  };
}

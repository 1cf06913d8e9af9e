// The uWebSockets.js adapter: the only code that touches uWS `req`/`res`. Headers are copied
// before anything can yield (uWS invalidates `req` after the handler returns), `onAborted` is set
// before waiting, and every answer is written inside `cork`.
import { STATUS_CODES } from 'node:http';
import type { HttpRequest, HttpResponse, us_listen_socket } from 'uWebSockets.js';
import type { Answer } from '../decision/plugins.js';
import type { Routes } from './routes.js';
import {
  createDispatch,
  drain,
  listenOn,
  type Transport,
  type UwsModule,
  type Wire,
} from './transport.js';

/** Status lines as uWS writes them (`204 No Content`), built once from node:http's reason phrases. */
const STATUS_TEXT: Readonly<Record<number, string>> = Object.fromEntries(
  Object.entries(STATUS_CODES).map(([code, reason]) => [code, `${code} ${reason}`]),
);

/** uWS answers a write after the client left with a crash: `aborted` is set by `onAborted`. */
type Response = HttpResponse & { aborted?: boolean };

const wire: Wire<HttpRequest, Response> = {
  method: (req) => req.getMethod().toUpperCase(),
  answersHead: false,
  header: (req, key) => req.getHeader(key) || undefined,
  policy: (req) => req.getQuery('policy') || undefined,
  watch(res) {
    res.onAborted(() => {
      res.aborted = true;
    });
  },
  isOpen: (res) => res.aborted !== true,
  readBody(_req, res, max, done) {
    // The chunks live in memory uWS reuses, so each is copied at once.
    const chunks: Buffer[] = [];
    let size = 0;
    res.onAborted(() => {
      res.aborted = true;
      done(undefined);
    });
    res.onData((chunk, isLast) => {
      size += chunk.byteLength;
      if (size > max) return done(undefined);
      chunks.push(Buffer.from(chunk.slice(0)));
      if (isLast) done(Buffer.concat(chunks).toString('utf8'));
    });
  },
  write(res, answer) {
    res.cork(() => {
      res.writeStatus(STATUS_TEXT[answer.status] ?? String(answer.status));
      for (const [name, value] of answer.headers) res.writeHeader(name, value);
      // 204 has no body by definition; 401/403 need `Content-Length: 0` or keep-alive clients wait.
      if (answer.status === 204) res.endWithoutBody();
      else res.end((answer as Answer).body ?? '');
    });
  },
};

export function createUwsTransport(uws: UwsModule, routes: Routes): Transport {
  const app = uws.App();
  const { dispatch, verify, inFlight } = createDispatch(routes, wire);
  let listenSocket: us_listen_socket | undefined;
  // uWS's router matches /verify itself, so the hot path reads no URL.
  app.any('/verify', (res: Response, req) => verify(req, res));
  app.any('/*', (res: Response, req) => dispatch(req, res, req.getUrl()));

  return {
    name: 'uws',
    listen(listen) {
      return listenOn(
        listen,
        () =>
          new Promise((resolve, reject) => {
            const done = (socket: us_listen_socket | false) => {
              if (!socket) return reject(new Error('no socket'));
              listenSocket = socket;
              resolve(listen.kind === 'tcp' ? uws.us_socket_local_port(socket) : 0);
            };
            if (listen.kind === 'unix') app.listen_unix(done, listen.path);
            else app.listen(listen.host, listen.port, done);
          }),
      );
    },
    async close(graceMs) {
      if (listenSocket) uws.us_listen_socket_close(listenSocket);
      listenSocket = undefined;
      await drain(inFlight, graceMs);
    },
  };
}

// The node:http adapter: the fallback when the uWS addon cannot load (musl, another Node ABI), an
// explicit choice with VERIFIER_TRANSPORT=node, and the metrics listener. Same routes, same bytes
// on the wire as the uWS adapter.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Answer } from '../decision/plugins.js';
import type { Routes } from './routes.js';
import { createDispatch, drain, listenOn, type Transport, type Wire } from './transport.js';

const single = (value: string | string[] | undefined): string | undefined =>
  Array.isArray(value) ? value[0] : value || undefined;

const wire: Wire<IncomingMessage, ServerResponse> = {
  method: (req) => req.method ?? '',
  answersHead: true,
  header: (req, key) => single(req.headers[key]),
  policy(req) {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    return q === -1 ? undefined : new URLSearchParams(url.slice(q + 1)).get('policy') || undefined;
  },
  watch: () => undefined,
  isOpen: (res) => !res.destroyed,
  readBody(req, _res, max, done) {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= max) return void chunks.push(chunk);
      req.removeAllListeners('data').removeAllListeners('end');
      done(undefined);
      req.destroy();
    });
    req.once('error', () => done(undefined));
    req.on('end', () => done(Buffer.concat(chunks).toString('utf8')));
  },
  write(res, answer) {
    const headers = answer.headers.flat();
    // As uWS does: a length rather than chunking, `Content-Length: 0` on a 401/403 of /verify.
    if (answer.status !== 204)
      headers.push('Content-Length', String(Buffer.byteLength((answer as Answer).body ?? '')));
    res.writeHead(answer.status, headers);
    res.end((answer as Answer).body);
  },
};

export function createNodeTransport(routes: Routes): Transport {
  const { dispatch, inFlight } = createDispatch(routes, wire);
  const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    dispatch(req, res, q === -1 ? url : url.slice(0, q));
  });

  return {
    name: 'node',
    listen(listen) {
      return listenOn(
        listen,
        () =>
          new Promise((resolve, reject) => {
            server.once('error', reject);
            const done = () => {
              const address = server.address();
              resolve(typeof address === 'object' && address !== null ? address.port : 0);
            };
            if (listen.kind === 'unix') server.listen(listen.path, done);
            else server.listen(listen.port, listen.host, done);
          }),
      );
    },
    async close(graceMs) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await drain(inFlight, graceMs);
      server.closeAllConnections();
      await closed;
    },
  };
}

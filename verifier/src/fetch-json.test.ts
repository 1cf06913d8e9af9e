import { createServer, type Server, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson } from './fetch-json.js';

/** A fake IdP whose answer the test sets; `sent` counts the body bytes it managed to write. */
let reply: (res: ServerResponse) => void;
let sent = 0;
let base: string;
let server: Server;

beforeAll(async () => {
  server = createServer((_req, res) => reply(res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

const MiB = 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 0x20);

/** Streams `total` bytes in chunks with no Content-Length, as long as the client keeps reading. */
function endlessChunked(total: number) {
  return (res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"keys":[');
    const pump = () => {
      while (sent < total) {
        sent += CHUNK.length;
        if (!res.write(CHUNK)) return void res.once('drain', pump);
      }
      res.end(']}');
    };
    res.on('close', () => res.removeAllListeners('drain'));
    pump();
  };
}

describe('fetchJson', () => {
  it('parses a JSON answer', async () => {
    reply = (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"keys":[]}');
    await expect(fetchJson(`${base}/jwks`, { timeout: 2 })).resolves.toMatchObject({
      status: 200,
      body: { keys: [] },
    });
  });

  it('stops reading a chunked body with no Content-Length as soon as it passes 1 MiB', async () => {
    sent = 0;
    reply = endlessChunked(64 * MiB);
    const rssBefore = process.memoryUsage().rss;
    await expect(fetchJson(`${base}/jwks`, { timeout: 10 })).rejects.toThrow(
      `${base}/jwks: body larger than ${MiB} bytes`,
    );
    // The server could only push what the socket buffers held after we cancelled, far below the
    // 64 MiB it offered; reading the body whole first would have taken all of it.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(sent).toBeLessThan(8 * MiB);
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(32 * MiB);
  });

  it('refuses a declared Content-Length over the cap before reading', async () => {
    reply = (res) =>
      res.writeHead(200, { 'content-length': String(2 * MiB) }).end(Buffer.alloc(2 * MiB, 0x20));
    await expect(fetchJson(`${base}/big`, { timeout: 2 })).rejects.toThrow(/body larger than/);
  });

  it('refuses plain http to a host that is not loopback, before any request, unless opted in', async () => {
    await expect(fetchJson('http://idp.invalid/jwks', { timeout: 1 })).rejects.toThrow(
      'http://idp.invalid/jwks: plain http to a host that is not loopback refused',
    );
    // Opted in, the request is attempted (and fails only because the host does not exist).
    await expect(
      fetchJson('http://idp.invalid/jwks', { timeout: 1, allowHttp: true }),
    ).rejects.toThrow('http://idp.invalid/jwks: unreachable');
  });

  it('refuses a redirect', async () => {
    reply = (res) => res.writeHead(302, { location: 'https://evil.example/jwks' }).end();
    await expect(fetchJson(`${base}/jwks`, { timeout: 2 })).rejects.toThrow(/redirect \(302\)/);
  });
});

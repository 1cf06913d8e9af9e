// For comparison only: the study's plain Node.js gate (decode the JWT payload, fetch the user-info
// endpoint per request) without its bug — a 401 never carries the secrets.
import { createServer } from 'node:http';

const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? '127.0.0.1';
const userinfoUrl = process.env.USERINFO_URL ?? 'http://127.0.0.1:8082/userinfo';
const secrets = process.env.SECRETS ?? '{}';
const bearer = /^Bearer ([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]*)$/;

function send(res, status, body, headers = {}) {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(body);
}

function deny(res) {
  send(res, 401, '{"error":"unauthorized"}', { 'WWW-Authenticate': 'Bearer realm="study-node"' });
}

function decodePayload(segment) {
  try {
    return JSON.parse(Buffer.from(segment, 'base64url').toString());
  } catch {
    return null;
  }
}

async function secret(req, res) {
  const authorization = req.headers.authorization ?? '';
  const match = bearer.exec(authorization);
  const claims = match && decodePayload(match[2]);
  if (!claims || typeof claims !== 'object') return deny(res);
  try {
    const reply = await fetch(userinfoUrl, { headers: { authorization } });
    await reply.arrayBuffer();
    if (reply.status !== 200) return deny(res);
  } catch {
    return deny(res);
  }
  send(res, 200, secrets, { 'Cache-Control': 'no-store' });
}

const server = createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0];
  if (path === '/hello') return send(res, 200, '');
  if (path === '/secret' && req.method === 'GET') return void secret(req, res);
  send(res, 404, '{"error":"not_found"}');
});

server.keepAliveTimeout = 65_000;
server.listen(port, host, () => console.log(`study-node listening on ${host}:${port}`));
for (const signal of ['SIGTERM', 'SIGINT'])
  process.on(signal, () => server.close(() => process.exit(0)));

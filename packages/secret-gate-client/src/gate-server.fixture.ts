// A real HTTP server on a free loopback port that answers GET /secret[/name] the way the gate's
// contract says (or however a test scripts it), and records every request it saw.
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
// Node's own timer, so a test that fakes the global one still gets its delayed answers.
import { setTimeout as nodeSetTimeout } from 'node:timers';

export interface SeenRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
}

export interface ScriptedAnswer {
  readonly status?: number;
  readonly headers?: Record<string, string>;
  /** A JSON value, or a string sent as it is. */
  readonly body?: unknown;
  /** Milliseconds to wait before answering. */
  readonly delayMs?: number;
}

export type Answerer = (request: SeenRequest, index: number) => ScriptedAnswer;

export interface GateServer {
  readonly url: string;
  readonly seen: SeenRequest[];
  answer(answerer: Answerer): void;
  close(): Promise<void>;
}

/** The gate's clock as the tests' server reads it (epoch seconds). */
export function gateNow(): number {
  return Math.floor(Date.now() / 1000);
}

/**
 * A contract answer: the static values plus minted ones that live `lifetimes[name]` seconds from
 * `now`, with the `Date` header on the same clock second.
 */
export function mintedAnswer(
  staticValues: Record<string, string>,
  minted: Record<string, string>,
  lifetimes: Record<string, number>,
  now = gateNow(),
): ScriptedAnswer {
  const expires = Object.fromEntries(
    Object.keys(minted).map((name) => [name, now + (lifetimes[name] ?? 60)]),
  );
  return {
    headers: { Date: new Date(now * 1000).toUTCString() },
    body: { ...staticValues, ...minted, expires_at: expires },
  };
}

export async function startGateServer(): Promise<GateServer> {
  const seen: SeenRequest[] = [];
  let answerer: Answerer = () => ({ status: 404, body: { error: 'not_found' } });
  const server = createServer((req, res) => {
    const request = { method: req.method ?? '', path: req.url ?? '', headers: req.headers };
    seen.push(request);
    const answer = answerer(request, seen.length - 1);
    const send = () => {
      const body =
        typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body ?? {});
      res.writeHead(answer.status ?? 200, {
        'Content-Type': 'application/json',
        'Cache-Control': 'no-store',
        ...answer.headers,
      });
      res.end(body);
    };
    if (answer.delayMs) nodeSetTimeout(send, answer.delayMs);
    else send();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/secret`,
    seen,
    answer(next) {
      answerer = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

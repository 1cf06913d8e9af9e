// The HTTP edge on uWebSockets.js (no node:http fallback: it ships binaries for every platform we
// run on): what each path answers, and the only code that touches uWS `req`/`res`. uWS invalidates
// `req` once the handler returns, so headers are copied first; a write after the client left
// crashes it, so `onAborted` is set before anything is awaited; each answer is one `cork`.
import { chmodSync, rmSync } from 'node:fs';
import type { HttpRequest, HttpResponse, us_listen_socket } from 'uWebSockets.js';
import type { Listen } from '../config/model.js';
import type { Authorize } from '../decision/authorize.js';
import type { VerifyRequest } from '../decision/decision.js';
import {
  MAX_RECEIVER_BODY_BYTES,
  type Answer,
  type Header,
  type Receiver,
} from '../decision/decision.js';
import type { Metrics } from '../metrics.js';
import { BODY_TOO_LARGE, METHOD_NOT_ALLOWED } from '../refusals.js';
import { LIMITED } from './call-limit.js';
import { CLIENT_KEY_HEADER, EDGE_KEY_HEADER, REQUEST_HEADERS } from './contract.js';
import { CALLER_UNKNOWN, CALLER_UNKNOWN_BODY } from './edge-key.js';
import { loadUws } from './uws-addon.js';
import { renderDecision, type VerifyAnswer } from './verify-answer.js';
import { statusText, withHead, type WithHead } from './answer-head.js';
import type { Decision } from '../decision/decision.js';

/** The checked addon, hashed once however many listeners a process opens. */
let addon: ReturnType<typeof loadUws> | undefined;
/** `aborted` is set by `onAborted` once the client has left. */
type Response = HttpResponse & { aborted?: boolean };
/** A page's or a receiver's answer, or /verify's (which has no body). */
type Reply = Answer | VerifyAnswer;
/** A GET page: health, readiness, metrics. */
export type Page = () => Answer | Promise<Answer>;

export interface Routes {
  /** /verify, any method (auth_request keeps the client's); absent on the metrics listener. */
  readonly verify?: Authorize;
  /** How /verify's decisions are written (verify-answer.ts's createRenderer); default: plain. */
  readonly render?: ((decision: Decision) => VerifyAnswer) | undefined;
  /**
   * Whether /verify reads the whole request for a policy (`X-SG-Policy`'s value) and trace
   * context (`traceparent`): its DPoP step, a decision log line or a recorded span reads
   * `X-Original-*` and `DPoP`; false: only the credentials and the trace context are read.
   * Absent: always whole.
   */
  readonly readsWhole?: ((policy: string | undefined, traceparent?: string) => boolean) | undefined;
  /** Asked before /verify does any token work; false: answered LIMITED (call-limit.ts). */
  readonly admit?: (clientKey: string | undefined) => boolean;
  /**
   * Asked first on /verify and the receivers when an edge key is configured (edge-key.ts):
   * false answers 401 before the call limit or any other work.
   */
  readonly isEdge?: ((presented: string) => boolean) | undefined;
  /** GET pages by path (`/healthz`, `/readyz`, `/metrics` unless it has a listener of its own). */
  readonly pages: ReadonlyMap<string, Page>;
  /** POST receivers by path (`/backchannel-logout`, `/ssf/events`); only the ones switched on. */
  readonly receivers: ReadonlyMap<string, Receiver>;
}

const TEXT: Header = ['Content-Type', 'text/plain; charset=utf-8'];
const NO_STORE: Header = ['Cache-Control', 'no-store'];
const NOT_FOUND: Answer = { status: 404, headers: [TEXT], body: 'not found\n' };
const CLIENT_KEY = CLIENT_KEY_HEADER.name.toLowerCase();
const EDGE_KEY = EDGE_KEY_HEADER.name.toLowerCase();
/**
 * /verify's header names as bytes: uWS converts a string key to UTF-8 on every `getHeader` (an
 * allocation and a copy), an ArrayBuffer it reads in place (a typed array costs it a lookup more).
 */
const asKey = (name: string): ArrayBuffer => new TextEncoder().encode(name.toLowerCase()).buffer;
const VERIFY_KEYS = Object.fromEntries(
  REQUEST_HEADERS.map(({ field, key }) => [field, asKey(key)]),
) as Readonly<Record<keyof VerifyRequest, ArrayBuffer>>;
const CLIENT_KEY_BYTES = asKey(CLIENT_KEY);
const EDGE_KEY_BYTES = asKey(EDGE_KEY);
const CONTENT_TYPE_BYTES = asKey('content-type');
const CONTENT_LENGTH_BYTES = asKey('content-length');
/** A receiver's body as text; a leading byte order mark is kept, as Buffer's decoder keeps it. */
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });

/**
 * The receivers' answers with their heads prepared, each the first time it is written: a receiver
 * answers with a few answers built once (revocation/receiver.ts), so a flood of refusals writes
 * each head in one call. Weak: an answer built for one request is forgotten with it.
 */
const heads = new WeakMap<Answer, WithHead<Answer>>();
function headed(answer: Answer): WithHead<Answer> {
  let prepared = heads.get(answer);
  if (prepared === undefined) heads.set(answer, (prepared = withHead({ ...answer })));
  return prepared;
}

/** The routes of the main listener, and `metricsOnly`'s: GET /metrics and 404 to everything else. */
export function createRoutes(parts: {
  authorize: Authorize;
  admit: NonNullable<Routes['admit']>;
  isEdge?: Routes['isEdge'];
  isReady: () => boolean;
  metrics: Metrics;
  /** False when VERIFIER_METRICS_LISTEN moves `/metrics` to its own listener. */
  metricsOnMain: boolean;
  receivers?: ReadonlyMap<string, Receiver> | undefined;
  /** A line /readyz adds to its answer (e.g. the revocation store is unreachable). */
  readinessNote: () => string | undefined;
  render?: Routes['render'];
  readsWhole?: Routes['readsWhole'];
  /** More GET pages by path (the minted values' JWKS). */
  pages?: ReadonlyMap<string, Page>;
}) {
  const ok: Answer = { status: 200, headers: [TEXT, NO_STORE], body: 'ok\n' };
  const notReady: Answer = { ...ok, status: 503, body: 'key sets not loaded\n' };
  const scrape = async (): Promise<Answer> => ({
    status: 200,
    headers: [['Content-Type', parts.metrics.registry.contentType], NO_STORE],
    body: await parts.metrics.render(),
  });
  /** 200 once every issuer's key set has loaded (and is not too stale). */
  const readyz = (): Answer => {
    const note = parts.readinessNote();
    const base = parts.isReady() ? ok : notReady;
    if (note === undefined) return base;
    return { ...base, body: base === ok ? `ok; ${note}\n` : `${base.body}${note}\n` };
  };
  const pages = new Map<string, Page>([
    ['/healthz', () => ok],
    ['/readyz', readyz],
  ]);
  if (parts.metricsOnMain) pages.set('/metrics', scrape);
  for (const [path, page] of parts.pages ?? []) pages.set(path, page);
  return {
    verify: parts.authorize,
    render: parts.render,
    readsWhole: parts.readsWhole,
    admit: parts.admit,
    isEdge: parts.isEdge,
    readyz,
    pages,
    receivers: parts.receivers ?? new Map<string, Receiver>(),
    metricsOnly: { pages: new Map([['/metrics', scrape]]), receivers: new Map() },
  };
}

// The answer `writeCorked` writes: set just before the `cork` that calls it synchronously, and
// cleared there, so one function serves every `cork` and an answer allocates no closure.
let corkedRes: Response | undefined;
let corkedAnswer: Reply | undefined;

function writeCorked(): void {
  const res = corkedRes!;
  const answer = corkedAnswer!;
  corkedRes = corkedAnswer = undefined;
  writeAnswer(res, answer);
}

/** Status, headers and end; a prepared head (answer-head.ts) is one call for the status and headers. */
function writeAnswer(res: Response, answer: WithHead<Reply>): void {
  const { head } = answer;
  if (head !== undefined) res.writeStatus(head);
  else {
    res.writeStatus(statusText(answer.status));
    for (const [name, value] of answer.headers) res.writeHeader(name, value);
  }
  if (answer.status === 204) res.endWithoutBody();
  else res.end('body' in answer ? answer.body : '');
}

/** 204 has no body; a 401/403 of /verify needs `Content-Length: 0` or keep-alive clients wait. */
function write(res: Response, answer: Reply): void {
  if (res.aborted === true) return;
  corkedRes = res;
  corkedAnswer = answer;
  res.cork(writeCorked);
}

export function describe(listen: Listen): string {
  return listen.kind === 'unix' ? `unix:${listen.path}` : `${listen.host}:${listen.port}`;
}

/**
 * Serves `routes`: `/verify` matched by uWS's own router (the hot path reads no URL), then the GET
 * pages and POST receivers, 404 elsewhere.
 */
export function createTransport(routes: Routes) {
  const uws = (addon ??= loadUws());
  const app = uws.App();
  let inFlight = 0;
  let socket: us_listen_socket | undefined;
  const asIs = (answer: Answer) => answer;

  /** Answers once `pending` settles: counted in flight, and not written if the client has left. */
  function later<T>(res: Response, pending: Promise<T>, render: (value: T) => Reply): void {
    inFlight++;
    res.onAborted(() => {
      res.aborted = true;
    });
    void pending.then((value) => {
      inFlight--;
      write(res, render(value));
    });
  }

  /**
   * A receiver's body up to the cap, then its answer. A `Content-Length` over the cap is refused
   * before a byte is read. A body that arrives in one chunk (a push almost always does) is decoded
   * where uWS holds it; a longer one is copied into one buffer as it arrives (uWS reuses the
   * chunks' memory). A receiver that answers at once (a refusal) is written at once, inside uWS's
   * data callback, where uWS has corked the socket already: no promise, no continuation, no cork
   * call, and the head of an answer built once is written in one call (`headed`). Junk floods this
   * path (docs/performance.md, "Junk at the receivers"), so per push it makes two closures (the
   * data and abort callbacks uWS needs) and allocates little more than the body.
   */
  function receive(
    res: Response,
    receiver: Receiver,
    contentType: string | undefined,
    clientKey: string | undefined,
    traceparent: string | undefined,
    contentLength: string,
  ): void {
    const declared = contentLength === '' ? undefined : Number(contentLength);
    if (declared !== undefined && !(declared <= MAX_RECEIVER_BODY_BYTES))
      return write(res, BODY_TOO_LARGE);
    const cap = declared ?? MAX_RECEIVER_BODY_BYTES;
    // Counted in flight from here until answered or abandoned: a stop waits for the body and the
    // answer. `done` once either happened; chunks still arriving are ignored.
    inFlight++;
    let done = false;
    res.onAborted(() => {
      res.aborted = true;
      if (done) return;
      done = true;
      inFlight--;
    });
    let buffer: Buffer | undefined;
    let size = 0;
    res.onData((chunk, isLast) => {
      if (done) return;
      const length = chunk.byteLength;
      let reply: Answer | Promise<Answer>;
      if (size + length > cap) reply = BODY_TOO_LARGE;
      else if (isLast && buffer === undefined)
        reply = receiver({ contentType, clientKey, traceparent, body: utf8.decode(chunk) });
      else {
        buffer ??= Buffer.allocUnsafe(cap);
        buffer.set(new Uint8Array(chunk), size);
        size += length;
        if (!isLast) return;
        const body = buffer.toString('utf8', 0, size);
        reply = receiver({ contentType, clientKey, traceparent, body });
      }
      if (reply instanceof Promise) {
        void reply.then((answer) => {
          if (done) return;
          done = true;
          inFlight--;
          write(res, answer);
        });
        return;
      }
      done = true;
      inFlight--;
      writeAnswer(res, headed(reply));
    });
  }

  /** A receiver's route: POST only (uWS's router; other methods reach `/*`, which answers 405). */
  const post = (receiver: Receiver) => (res: Response, req: HttpRequest) => {
    if (isEdge?.(req.getHeader(EDGE_KEY_BYTES)) === false) return write(res, CALLER_UNKNOWN_BODY);
    receive(
      res,
      receiver,
      req.getHeader(CONTENT_TYPE_BYTES) || undefined,
      req.getHeader(CLIENT_KEY_BYTES) || undefined,
      req.getHeader(VERIFY_KEYS.traceparent) || undefined,
      req.getHeader(CONTENT_LENGTH_BYTES),
    );
  };

  const { isEdge } = routes;
  const authorize = routes.verify;
  const render = routes.render ?? renderDecision;
  const readsWhole = routes.readsWhole;
  if (authorize !== undefined)
    app.any('/verify', (res: Response, req: HttpRequest) => {
      // Before the limit: a caller without the key must not spend another client's calls.
      if (isEdge?.(req.getHeader(EDGE_KEY_BYTES)) === false) return write(res, CALLER_UNKNOWN);
      if (routes.admit?.(req.getHeader(CLIENT_KEY_BYTES) || undefined) === false)
        return write(res, LIMITED);
      const policy = req.getHeader(VERIFY_KEYS.policy) || undefined;
      const traceparent = req.getHeader(VERIFY_KEYS.traceparent) || undefined;
      const whole = readsWhole === undefined || readsWhole(policy, traceparent);
      // One literal, one shape whatever was read; the rest only when something will read it.
      const request: VerifyRequest = {
        policy,
        authorization: req.getHeader(VERIFY_KEYS.authorization) || undefined,
        originalUri: whole ? req.getHeader(VERIFY_KEYS.originalUri) || undefined : undefined,
        originalMethod: whole ? req.getHeader(VERIFY_KEYS.originalMethod) || undefined : undefined,
        dpop: whole ? req.getHeader(VERIFY_KEYS.dpop) || undefined : undefined,
        originalOrigin: whole ? req.getHeader(VERIFY_KEYS.originalOrigin) || undefined : undefined,
        traceparent,
      };
      const decision = authorize(request);
      // A decision made at once (a cached token) is written before the handler returns, where uWS
      // has corked the socket already: no cork call, no abort handler, no promise, no continuation.
      if (decision instanceof Promise) later(res, decision, render);
      else writeAnswer(res, render(decision));
    });
  for (const [path, receiver] of routes.receivers) app.post(path, post(receiver));
  app.any('/*', (res: Response, req: HttpRequest) => {
    const path = req.getUrl();
    const method = req.getMethod().toUpperCase();
    // A receiver's POST is routed to it above; any other method is refused here.
    if (routes.receivers.has(path)) return write(res, METHOD_NOT_ALLOWED);
    const page = routes.pages.get(path);
    if (page === undefined || method !== 'GET') return write(res, NOT_FOUND);
    const answer = page();
    if (!(answer instanceof Promise)) return write(res, answer);
    later(res, answer, asIs);
  });

  return {
    /**
     * Resolves with the bound TCP port (0 on a unix socket). A socket file left by a crashed run
     * is removed first (nothing else ever is). NGINX, another user sharing a group, must write to
     * connect: the socket is 0660, and its directory (0770) decides who may reach it at all.
     */
    async listen(listen: Listen): Promise<number> {
      if (listen.kind === 'unix') rmSync(listen.path, { force: true });
      const bound = await new Promise<us_listen_socket | false>((resolve) => {
        if (listen.kind === 'unix') app.listen_unix(resolve, listen.path);
        else app.listen(listen.host, listen.port, resolve);
      });
      if (bound === false) throw new Error(`cannot listen on ${describe(listen)}`);
      socket = bound;
      if (listen.kind === 'tcp') return uws.us_socket_local_port(bound);
      chmodSync(listen.path, 0o660);
      return 0;
    },
    /** Stops accepting, then waits up to `graceMs` for the requests in flight. */
    async close(graceMs: number): Promise<void> {
      if (socket !== undefined) uws.us_listen_socket_close(socket);
      socket = undefined;
      const deadline = Date.now() + graceMs;
      while (inFlight > 0 && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 10));
    },
  };
}

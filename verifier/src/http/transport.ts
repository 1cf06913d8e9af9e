// What both HTTP adapters share: the transport contract, one dispatch from a request to its route
// (so uWebSockets.js and node:http answer alike), the unix socket helpers, and the choice between
// them (VERIFIER_TRANSPORT). Each adapter only reads its library's request and writes an answer.
import { chmodSync, unlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Listen, TransportChoice } from '../config/model.js';
import type { Authorize, VerifyRequest } from '../decision/authorize.js';
import type { Decision } from '../decision/decision.js';
import { MAX_RECEIVER_BODY_BYTES, type Answer } from '../decision/plugins.js';
import type { Logger } from '../log.js';
import { CLIENT_KEY, LIMITED } from './call-limit.js';
import { REQUEST_HEADERS } from './contract.js';
import { BODY_TOO_LARGE, METHOD_NOT_ALLOWED, NOT_FOUND, type Routes } from './routes.js';
import { renderDecision, type VerifyAnswer } from './verify-answer.js';

export interface Transport {
  readonly name: 'uws' | 'node';
  /** Starts listening; resolves with the bound TCP port (0 for a unix socket). */
  listen(listen: Listen): Promise<number>;
  /** Stops accepting, waits for in-flight requests up to `graceMs`, then drops connections. */
  close(graceMs: number): Promise<void>;
}

/** An answer to write: /verify's carry no body (401/403 say `Content-Length: 0`). */
export type Written = Answer | VerifyAnswer;

/**
 * How one HTTP library's request `Q` is read and its response `S` written. Everything is read
 * synchronously in the handler (uWS invalidates `req` once it returns); the body only through
 * `readBody`. Module-level objects: a request allocates nothing for them.
 */
export interface Wire<Q, S> {
  /** Upper case. */
  method(req: Q): string;
  /** True when the library itself drops the body of a HEAD answer (node:http; uWS does not). */
  readonly answersHead: boolean;
  header(req: Q, key: string): string | undefined;
  policy(req: Q): string | undefined;
  /** Starts watching for the client leaving; needed before anything is awaited (uWS). */
  watch(res: S): void;
  isOpen(res: S): boolean;
  /** The body (the client watched meanwhile); undefined past `max` bytes or once the client left. */
  readBody(req: Q, res: S, max: number, done: (body: string | undefined) => void): void;
  write(res: S, answer: Written): void;
}

/** Answers one request by its path; `inFlight` counts what is still to be answered. */
export function createDispatch<Q, S>(routes: Routes, wire: Wire<Q, S>) {
  let inFlight = 0;
  /** Writes `render(value)` once `pending` settles, unless the client has gone. */
  function later<T>(res: S, pending: Promise<T>, render: (value: T) => Written): void {
    void pending.then((value) => {
      inFlight--;
      if (wire.isOpen(res)) wire.write(res, render(value));
    });
  }
  const asIs = (answer: Answer) => answer;

  /** /verify, the hot path: the call counted, the contract's headers copied, the decision rendered. */
  function verify(req: Q, res: S, authorize: Authorize): void {
    if (routes.admit?.(wire.header(req, CLIENT_KEY)) === false) return wire.write(res, LIMITED);
    const request: { -readonly [K in keyof VerifyRequest]: VerifyRequest[K] } = {};
    for (const { field, key } of REQUEST_HEADERS) request[field] = wire.header(req, key);
    // NGINX names the policy in a header (its URL then has no variable to parse on every hit).
    request.policy = wire.policy(req) ?? request.policy;
    inFlight++;
    wire.watch(res);
    later<Decision>(res, authorize(request), renderDecision);
  }

  function dispatch(req: Q, res: S, path: string): void {
    if (path === '/verify' && routes.verify !== undefined) return verify(req, res, routes.verify);
    const receiver = routes.receivers.get(path);
    if (receiver !== undefined) {
      if (wire.method(req) !== 'POST') return wire.write(res, METHOD_NOT_ALLOWED);
      const contentType = wire.header(req, 'content-type');
      inFlight++;
      let read = false;
      return wire.readBody(req, res, MAX_RECEIVER_BODY_BYTES, (body) => {
        if (read) return;
        read = true;
        if (body !== undefined) return later(res, receiver({ contentType, body }), asIs);
        // Written at once: the adapter drops the connection right after.
        inFlight--;
        if (wire.isOpen(res)) wire.write(res, BODY_TOO_LARGE);
      });
    }
    const page = routes.pages.get(path);
    const method = page === undefined ? '' : wire.method(req);
    if (page === undefined || (method !== 'GET' && (method !== 'HEAD' || !wire.answersHead)))
      return wire.write(res, NOT_FOUND);
    const answer = page();
    if (!(answer instanceof Promise)) return wire.write(res, answer);
    inFlight++;
    wire.watch(res);
    later(res, answer, asIs);
  }

  return {
    dispatch,
    /** For a library whose own router has already matched `/verify` (uWS). */
    verify: (req: Q, res: S) =>
      routes.verify ? verify(req, res, routes.verify) : wire.write(res, NOT_FOUND),
    inFlight: () => inFlight,
  };
}

export type UwsModule = typeof import('uWebSockets.js');

/**
 * Loads the uWS native addon. The npm repack silently swaps in a `ws`-based shim when its binary
 * does not match this platform; only the real addon exports `getParts`, so that is what we test.
 */
export function loadUws(): UwsModule | Error {
  try {
    const uws = createRequire(import.meta.url)('uWebSockets.js') as UwsModule;
    if (typeof uws.getParts !== 'function')
      return new Error('uWebSockets.js native addon did not load (shim in use)');
    return uws;
  } catch (error) {
    return new Error(`uWebSockets.js could not be loaded: ${(error as Error).message}`);
  }
}

/** `uws` insists on the addon; `auto` falls back to node:http with a warning; `node` never tries. */
export function pickTransport(
  choice: TransportChoice,
  logger: Logger,
  load: () => UwsModule | Error = loadUws,
): { kind: 'uws'; uws: UwsModule } | { kind: 'node' } {
  if (choice === 'node') return { kind: 'node' };
  const loaded = load();
  if (!(loaded instanceof Error)) return { kind: 'uws', uws: loaded };
  if (choice === 'uws') throw loaded;
  logger.warn({ reason: loaded.message }, 'falling back to the node:http transport');
  return { kind: 'node' };
}

/** Resolves after `inFlight()` reaches 0 or `graceMs` passes, whichever is first. */
export async function drain(inFlight: () => number, graceMs: number): Promise<void> {
  const deadline = Date.now() + graceMs;
  while (inFlight() > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export function describe(listen: Listen): string {
  return listen.kind === 'unix' ? `unix:${listen.path}` : `${listen.host}:${listen.port}`;
}

/**
 * Listens through `bind` (each library's own call), with a socket file left by a crashed run
 * removed first (nothing else is ever removed). NGINX runs as another user and reaches the socket
 * through a shared group: the socket is 0660 (connecting needs write permission), and its
 * directory (0770, owner and group) decides who may reach it at all.
 */
export async function listenOn(listen: Listen, bind: () => Promise<number>): Promise<number> {
  if (listen.kind === 'unix') {
    try {
      unlinkSync(listen.path);
    } catch {
      // absent: nothing to do
    }
  }
  const port = await bind().catch(() => {
    throw new Error(`cannot listen on ${describe(listen)}`);
  });
  if (listen.kind === 'unix') chmodSync(listen.path, 0o660);
  return listen.kind === 'tcp' ? port : 0;
}

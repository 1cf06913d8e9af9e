// The transport contract shared by the uWebSockets.js and node:http adapters, the helpers both use
// (neither adapter imports the other), and the choice between them (VERIFIER_TRANSPORT).
import { chmodSync, unlinkSync } from 'node:fs';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import type { Listen, TransportChoice } from '../config/model.js';
import type { Logger } from '../log.js';

export interface Transport {
  readonly name: 'uws' | 'node';
  /** Starts listening; resolves with the bound TCP port (0 for a unix socket). */
  listen(listen: Listen): Promise<number>;
  /** Stops accepting, waits for in-flight requests up to `graceMs`, then drops connections. */
  close(graceMs: number): Promise<void>;
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
 * NGINX runs as another user and reaches the socket through a shared group: the socket is 0660
 * (connecting needs write permission), and its directory (0770, owner and group) decides who
 * may reach it at all. Called once the socket exists.
 */
export function shareSocket(path: string): void {
  chmodSync(path, 0o660);
}

/** A socket file left by a crashed run would make listen fail; nothing else is ever removed. */
export function removeStaleSocket(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // absent: nothing to do
  }
}

/** Starts a node:http server on a TCP address or a unix socket; resolves with the bound port. */
export function listenNodeServer(server: Server, listen: Listen): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', () => reject(new Error(`cannot listen on ${describe(listen)}`)));
    const done = () => {
      const address = server.address();
      if (listen.kind === 'unix') shareSocket(listen.path);
      resolve(typeof address === 'object' && address ? address.port : 0);
    };
    if (listen.kind === 'unix') {
      removeStaleSocket(listen.path);
      server.listen(listen.path, done);
    } else {
      server.listen(listen.port, listen.host, done);
    }
  });
}

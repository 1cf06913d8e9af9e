// A throwaway redis-server (Debian's package) on a free loopback port, for tests of the shared DPoP
// replay and revocation stores. Nothing is persisted unless `dataDir` is given (then SIGTERM saves
// the keys and a server started again on that directory loads them); the process is stopped by
// the test that started it, and may be started again on the same `port` to play an outage.
import { spawn, type ChildProcess } from 'node:child_process';
import { createConnection } from 'node:net';
import { freePort } from '../../stack/ports.js';

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  /** SIGTERM shuts down cleanly (saving to `dataDir` if any); SIGKILL loses everything. */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** SIGSTOP: connections stay open and nothing answers (a half-open peer); `resume` undoes it. */
  pause(): void;
  resume(): void;
}

export const REDIS_SERVER_BINARY = '/usr/bin/redis-server';
export const REDIS_SENTINEL_BINARY = '/usr/bin/redis-sentinel';

/**
 * `requirePass`: the server refuses every command until a client sends `AUTH` with it.
 * `port`: listen there (a server started again where clients expect it) instead of a free one.
 * `dataDir`: keep the keys in `dump.rdb` there across a SIGTERM.
 * `args`: more `--option value` pairs (a replica's `--replicaof`, cluster mode).
 * `sentinelConfig`: start redis-sentinel on this (writable) configuration file instead.
 */
export async function startRedisServer(
  options: {
    requirePass?: string;
    port?: number;
    dataDir?: string;
    args?: readonly string[];
    sentinelConfig?: string;
  } = {},
): Promise<RedisServer> {
  const port = options.port ?? (await freePort());
  const sentinel = options.sentinelConfig === undefined ? [] : [options.sentinelConfig];
  const child: ChildProcess = spawn(
    sentinel.length > 0 ? REDIS_SENTINEL_BINARY : REDIS_SERVER_BINARY,
    [
      ...sentinel,
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      ...(options.dataDir === undefined
        ? ['--save', '']
        : ['--dir', options.dataDir, '--dbfilename', 'dump.rdb', '--save', '3600 1']),
      '--appendonly',
      'no',
      ...(options.requirePass === undefined ? [] : ['--requirepass', options.requirePass]),
      ...(options.args ?? []),
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitForPing(port, 10_000);
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill('SIGCONT');
      if (child.exitCode === null) child.kill(signal);
      await exited;
    },
    pause: () => void child.kill('SIGSTOP'),
    resume: () => void child.kill('SIGCONT'),
  };
}

async function waitForPing(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await ping(port)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`redis-server did not answer on port ${port}`);
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('error', () => resolve(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => {
      socket.destroy();
      // A server with a password answers NOAUTH: it is up all the same.
      resolve(/^(?:\+PONG|-NOAUTH)/.test(data.toString()));
    });
  });
}

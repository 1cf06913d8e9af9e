// A throwaway redis-server (Debian's package) on a free loopback port, for tests of the shared DPoP
// replay store. Nothing is persisted; the process is stopped by the test that started it.
import { spawn, type ChildProcess } from 'node:child_process';
import { createConnection } from 'node:net';
import { freePort } from '../../stack/ports.js';

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

export const REDIS_SERVER_BINARY = '/usr/bin/redis-server';

/** `requirePass`: the server refuses every command until a client sends `AUTH` with it. */
export async function startRedisServer(
  options: { requirePass?: string } = {},
): Promise<RedisServer> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    REDIS_SERVER_BINARY,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      ...(options.requirePass === undefined ? [] : ['--requirepass', options.requirePass]),
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitForPing(port, 10_000);
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
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

// Exactly N requests, one after another on one kept-alive connection: the traffic of a counted
// row, where a load generator's duration-bound runs and parallel connections would blur the count.
import { Agent, request } from 'node:http';

export interface KeepAliveClient {
  /** GET `path` with `headers`; resolves with the status once the body is read. */
  get(path: string, headers?: Readonly<Record<string, string>>): Promise<number>;
  /** Sends `count` requests made by `next(i)` in turn; throws on the first unexpected status. */
  send(
    count: number,
    next: (i: number) => { path: string; headers?: Readonly<Record<string, string>> },
    expected: number,
  ): Promise<void>;
  close(): void;
}

export function createKeepAliveClient(baseUrl: string): KeepAliveClient {
  const base = new URL(baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const get = (path: string, headers: Readonly<Record<string, string>> = {}) =>
    new Promise<number>((resolve, reject) => {
      const req = request(
        { agent, host: base.hostname, port: base.port, path, headers: { ...headers } },
        (res) => {
          res.resume();
          res.once('end', () => resolve(res.statusCode ?? 0));
          res.once('error', reject);
        },
      );
      req.once('error', reject);
      req.end();
    });
  return {
    get,
    async send(count, next, expected) {
      for (let i = 0; i < count; i++) {
        const { path, headers } = next(i);
        const status = await get(path, headers);
        if (status !== expected) {
          throw new Error(
            `request ${i + 1} of ${count} to ${path} answered ${status}, expected ${expected}`,
          );
        }
      }
    },
    close: () => agent.destroy(),
  };
}

// A small closed-loop load generator: N workers on keep-alive node:http agents, each sending the
// next request as soon as the previous one answers. Bounded by the caller (start/stop), loopback
// only, and it keeps a per-request timeline so a scenario can say *when* things failed.
import { Agent, request } from 'node:http';

export interface Sample {
  /** Milliseconds since the load started. */
  readonly at: number;
  /** HTTP status, or 0 when the connection failed. */
  readonly status: number;
  /** Whether the body carried a secret value. */
  readonly secret: boolean;
}

export interface LoadSpec {
  /** A short name for the verdict table. */
  readonly name: string;
  readonly url: string;
  readonly concurrency: number;
  /** Headers for the next request; called per request so tokens can change under load. */
  readonly headers: () => Record<string, string>;
  /** Secret values to look for in each body. */
  readonly secretValues: readonly string[];
  /** Called with every response (for the leak watch). */
  readonly onResponse?: (status: number, body: string) => void;
}

export interface LoadSummary {
  readonly name: string;
  readonly total: number;
  readonly byStatus: Readonly<Record<string, number>>;
  readonly withSecret: number;
  readonly samples: readonly Sample[];
  readonly seconds: number;
  /** Requests retried once after a connection reset (only set by `stop()`). */
  readonly retried?: number;
}

export interface Load {
  /** Stops issuing requests, waits for those in flight, and summarises. */
  stop(): Promise<LoadSummary>;
  /** Samples so far (live view, for scenarios that poll). */
  readonly samples: readonly Sample[];
  readonly startedAt: number;
}

/** Starts `spec.concurrency` workers at once; they run until `stop()`. */
export function startLoad(spec: LoadSpec): Load {
  const agent = new Agent({ keepAlive: true, maxSockets: spec.concurrency });
  const target = new URL(spec.url);
  const samples: Sample[] = [];
  const startedAt = Date.now();
  let running = true;
  let retried = 0;

  // A browser retries an idempotent GET once when a kept-alive connection turns out to be closed
  // (NGINX closes idle ones on reload); so does this client, as Node's documentation advises.
  const once = (retry = true): Promise<void> =>
    new Promise<void>((resolve) => {
      const req = request(
        {
          // The retry goes out on a new connection, as a browser's does: another kept-alive socket
          // of the same pool may belong to the same old worker and be closed just as well.
          agent: retry ? agent : false,
          host: target.hostname,
          port: target.port,
          path: target.pathname + target.search,
          headers: spec.headers(),
          timeout: 5000,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const body = Buffer.concat(chunks).toString('utf8');
            const status = res.statusCode ?? 0;
            samples.push({
              at: Date.now() - startedAt,
              status,
              secret: spec.secretValues.some((s) => body.includes(s)),
            });
            spec.onResponse?.(status, body);
            resolve();
          });
          res.on('error', () => resolve());
        },
      );
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', (error: NodeJS.ErrnoException) => {
        // A reset before any answer (a kept-alive socket closed under us, or a fresh connection an
        // old NGINX worker dropped while shutting down) is retried once and counted.
        if (retry && (req.reusedSocket || error.code === 'ECONNRESET')) {
          retried += 1;
          void once(false).then(resolve);
          return;
        }
        samples.push({ at: Date.now() - startedAt, status: 0, secret: false });
        // A refused connection returns at once; a short pause keeps a dead target from spinning.
        setTimeout(resolve, 20);
      });
      req.end();
    });

  const worker = async () => {
    while (running) await once();
  };
  const workers = Array.from({ length: spec.concurrency }, worker);

  return {
    samples,
    startedAt,
    async stop() {
      running = false;
      await Promise.all(workers);
      agent.destroy();
      return { ...summarize(spec.name, samples, (Date.now() - startedAt) / 1000), retried };
    },
  };
}

/** Counts samples by status, optionally only those within [from, to) ms. */
export function summarize(
  name: string,
  samples: readonly Sample[],
  seconds: number,
  from = 0,
  to = Infinity,
): LoadSummary {
  const picked = samples.filter((s) => s.at >= from && s.at < to);
  const byStatus: Record<string, number> = {};
  for (const s of picked) byStatus[s.status] = (byStatus[s.status] ?? 0) + 1;
  return {
    name,
    total: picked.length,
    byStatus,
    withSecret: picked.filter((s) => s.secret).length,
    samples: picked,
    seconds,
  };
}

/** `200: 5120, 503: 12` — statuses in ascending order. */
export function formatStatuses(byStatus: Readonly<Record<string, number>>): string {
  return Object.entries(byStatus)
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(([status, n]) => `${status === '0' ? 'conn-err' : status}: ${n}`)
    .join(', ');
}

// A trickle of /secret requests from a few keep-alive clients, kept up while a row of the gate table
// reloads NGINX or rotates the secrets, so the row can say how many requests failed meanwhile.
// Paced (about 100 requests/s in all) to stay inside the suites' per-IP rate limit. As a browser
// does, a request that meets a keep-alive connection the server has just closed (an NGINX reload
// retires its old workers' idle connections) is sent once more, and that answer counts.
import { Agent, get } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

export interface LoadOutcome {
  readonly sentAt: number;
  /** HTTP status, or the network error's code. */
  readonly status: number | string;
  readonly body: string;
}

export interface SteadyLoad {
  /** Outcomes so far (the array keeps growing until stop). */
  readonly outcomes: readonly LoadOutcome[];
  /** Ends the loops after their current request and returns every outcome. */
  stop(): Promise<readonly LoadOutcome[]>;
}

const CLIENTS = 2;
const PAUSE_MS = 20;

/**
 * Each client keeps one connection of its own, so the retry after a closed keep-alive connection
 * goes out on a new one (a pool would hand it the next idle connection the old worker is closing).
 */
async function getOnce(agent: Agent, url: string, token: string): Promise<LoadOutcome> {
  const first = await send(agent, url, token);
  return typeof first.status === 'string' ? send(agent, url, token) : first;
}

function send(agent: Agent, url: string, token: string): Promise<LoadOutcome> {
  const sentAt = performance.now();
  return new Promise((resolve) => {
    const request = get(
      url,
      { agent, headers: { authorization: `Bearer ${token}` }, timeout: 10_000 },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve({ sentAt, status: response.statusCode ?? 0, body }));
        response.on('error', (error: NodeJS.ErrnoException) =>
          resolve({ sentAt, status: error.code ?? error.name, body: '' }),
        );
      },
    );
    request.on('timeout', () =>
      request.destroy(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })),
    );
    request.on('error', (error: NodeJS.ErrnoException) =>
      resolve({ sentAt, status: error.code ?? error.name, body: '' }),
    );
  });
}

export function startSteadyLoad(url: string, token: string): SteadyLoad {
  const outcomes: LoadOutcome[] = [];
  let running = true;
  const agents = Array.from(
    { length: CLIENTS },
    () => new Agent({ keepAlive: true, maxSockets: 1 }),
  );
  const loops = agents.map(async (agent) => {
    while (running) {
      outcomes.push(await getOnce(agent, url, token));
      await sleep(PAUSE_MS);
    }
    agent.destroy();
  });
  return {
    outcomes,
    async stop() {
      running = false;
      await Promise.all(loops);
      return outcomes;
    },
  };
}

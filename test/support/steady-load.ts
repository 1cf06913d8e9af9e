// A trickle of /secret requests from a few keep-alive clients, kept up while a row of the gate table
// reloads NGINX or rotates the secrets, so the row can say how many requests failed meanwhile.
// Paced (about 100 requests/s in all) to stay inside the suites' per-IP rate limit. As a browser
// does, a request that meets a keep-alive connection the server has just closed (an NGINX reload
// retires its old workers' idle connections) is sent once more, and that answer counts.
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

async function getOnce(url: string, token: string): Promise<LoadOutcome> {
  const first = await send(url, token);
  return typeof first.status === 'string' ? send(url, token) : first;
}

async function send(url: string, token: string): Promise<LoadOutcome> {
  const sentAt = performance.now();
  try {
    const response = await fetch(url, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(10_000),
    });
    return { sentAt, status: response.status, body: await response.text() };
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    return { sentAt, status: cause?.code ?? (error as Error).name, body: '' };
  }
}

export function startSteadyLoad(url: string, token: string): SteadyLoad {
  const outcomes: LoadOutcome[] = [];
  let running = true;
  const loops = Array.from({ length: CLIENTS }, async () => {
    while (running) {
      outcomes.push(await getOnce(url, token));
      await sleep(PAUSE_MS);
    }
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

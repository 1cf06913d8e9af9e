// Secret rotation under load, against the real stack: the secrets file sits behind the kubelet's
// `..data` symlink and is rotated 20 times, in turn the three ways it happens (Kubernetes swaps the
// `..data` symlink, a deploy replaces the file, an operator edits it in place), while keep-alive
// clients (as browsers are) keep asking for /secret. No request may fail, none may see a mix of
// two generations, and every request sent 2 s after a rotation sees the new generation (the
// secret-set watcher publishes it, NGINX serves it without a reload).
import { mkdirSync, realpathSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../../stack/start-stack.js';

const CLIENTS = ['spa-demo', 'partner-app'] as const;
const CONCURRENCY = 16;
/** 20 rotations. */
const GENERATIONS = 21;
/** How soon a rotation must show (the watcher's poll plus NGINX's open_file_cache_valid). */
const VISIBLE_WITHIN_MS = 2_000;
const ROTATION_EVERY_MS = 2_600;

/** Every value carries its generation, so one response can be checked for a mix. */
function secretsFile(generation: number): string {
  const set = (name: string) => ({
    'x-api-key': `${name}-key-g${generation}`,
    'api-base': `https://api.example.com/g${generation}/${name}`,
  });
  return `${JSON.stringify({ default: set('default'), clients: { 'spa-demo': set('spa-demo') } }, null, 2)}\n`;
}

/** The generation a response's fields name; NaN when its two fields disagree. */
function generationOf(body: Record<string, string>): number {
  const fromKey = Number(/-g(\d+)$/.exec(body['x-api-key'] ?? '')?.[1]);
  const fromBase = Number(/\/g(\d+)\//.exec(body['api-base'] ?? '')?.[1]);
  return fromKey === fromBase ? fromKey : Number.NaN;
}

/**
 * The layout the kubelet gives a Secret volume: `secrets.json -> ..data/secrets.json`,
 * `..data -> ..<version>`. Rotations, in turn: the kubelet's (a new version directory and a fresh
 * `..data` symlink renamed over the old one, one atomic step), a replaced file (renamed over the
 * current one) and an in-place edit (the same file truncated and written again).
 */
function createSecretVolume(file: string) {
  const dir = dirname(file);
  const swap = (generation: number) => {
    const version = `..g${generation}`;
    mkdirSync(join(dir, version));
    writeFileSync(join(dir, version, 'secrets.json'), secretsFile(generation), { mode: 0o644 });
    symlinkSync(version, join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
  };
  const replace = (generation: number) => {
    const target = realpathSync(file);
    writeFileSync(`${target}.next`, secretsFile(generation), { mode: 0o644 });
    renameSync(`${target}.next`, target);
  };
  const editInPlace = (generation: number) => writeFileSync(file, secretsFile(generation));
  swap(0);
  symlinkSync('..data/secrets.json', `${file}.tmp`);
  renameSync(`${file}.tmp`, file);
  const ways = [swap, replace, editInPlace] as const;
  return { rotateTo: (generation: number) => ways[generation % ways.length]!(generation) };
}

type Outcome = {
  client: string;
  sentAt: number;
  doneAt: number;
  status: number | string;
  generation: number;
  /** Which set of the file answered: `default` or a client's own. */
  set?: string;
};

function getSecret(url: string, token: string, agent: Agent, client: string): Promise<Outcome> {
  const sentAt = performance.now();
  return new Promise((resolve) => {
    const fail = (status: number | string) =>
      resolve({ client, sentAt, doneAt: performance.now(), status, generation: Number.NaN });
    const req = request(url, { agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        try {
          const body = JSON.parse(text) as Record<string, string>;
          const set = /^(.*)-key-g\d+$/.exec(body['x-api-key'] ?? '')?.[1];
          resolve({
            client,
            sentAt,
            doneAt: performance.now(),
            status: res.statusCode ?? 0,
            generation: generationOf(body),
            set,
          });
        } catch {
          fail(`unparsable body (${res.statusCode})`);
        }
      });
      res.on('error', (error: NodeJS.ErrnoException) => fail(error.code ?? error.message));
    });
    req.on('error', (error: NodeJS.ErrnoException) => fail(error.code ?? error.message));
    req.end();
  });
}

describe('secret rotation under steady load', () => {
  let stack: Stack;
  const outcomes: Outcome[] = [];
  /** performance.now() right after each generation's swap returned (index = generation). */
  const swappedAt: number[] = [];

  beforeAll(async () => {
    stack = await startStack({
      // The per-IP rate limit would turn a load from one address into 429s.
      env: { nginx: { SG_SECRET_RATE: '100000r/s', SG_SECRET_BURST: '100000' } },
    });
    const volume = createSecretVolume(stack.files.secrets);
    swappedAt.push(performance.now());
    const tokens = Object.fromEntries(
      await Promise.all(
        CLIENTS.map(async (clientId) => [clientId, await stack.mintToken({ clientId })] as const),
      ),
    );
    const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    // The volume replaced the stack's own secrets file: the load starts once generation 0 shows.
    const started = performance.now();
    while (
      (await getSecret(stack.urls.secret, tokens['spa-demo'] as string, agent, '')).generation !== 0
    ) {
      if (performance.now() - started > 10_000) throw new Error('generation 0 never served');
      await sleep(50);
    }
    swappedAt[0] = performance.now();
    let running = true;
    const load = Array.from({ length: CONCURRENCY }, async (_, i) => {
      const client = CLIENTS[i % CLIENTS.length] as (typeof CLIENTS)[number];
      while (running)
        outcomes.push(await getSecret(stack.urls.secret, tokens[client] as string, agent, client));
    });
    await sleep(ROTATION_EVERY_MS);
    for (let generation = 1; generation < GENERATIONS; generation++) {
      volume.rotateTo(generation);
      swappedAt.push(performance.now());
      await sleep(ROTATION_EVERY_MS);
    }
    running = false;
    await Promise.all(load);
    agent.destroy();
  }, 150_000);

  afterAll(async () => {
    await stack?.stop();
  });

  it('answers every request with 200 and a whole secret set', () => {
    expect(outcomes.length).toBeGreaterThan(CONCURRENCY * GENERATIONS);
    const failed = outcomes.filter((o) => o.status !== 200);
    expect(failed.slice(0, 5)).toEqual([]);
  });

  it('never mixes two generations in one response', () => {
    expect(outcomes.filter((o) => o.status === 200 && Number.isNaN(o.generation))).toEqual([]);
  });

  it('serves the old generation before each rotation and the new one to every request sent 2 s after it', () => {
    expect(swappedAt).toHaveLength(GENERATIONS);
    for (let generation = 1; generation < GENERATIONS; generation++) {
      const swap = swappedAt[generation] as number;
      const before = outcomes.filter(
        (o) =>
          o.doneAt < swappedAt[generation]! &&
          o.sentAt > swappedAt[generation - 1]! + VISIBLE_WITHIN_MS,
      );
      const after = outcomes.filter(
        (o) =>
          o.sentAt > swap + VISIBLE_WITHIN_MS &&
          (generation + 1 === GENERATIONS || o.doneAt < swappedAt[generation + 1]!),
      );
      // In between, either generation, never an older one or a newer one.
      const between = outcomes.filter(
        (o) => o.sentAt > swap && o.sentAt <= swap + VISIBLE_WITHIN_MS && o.status === 200,
      );
      expect(
        between.filter((o) => o.generation !== generation && o.generation !== generation - 1),
        `between swap ${generation} and 2 s later`,
      ).toEqual([]);
      expect(before.length, `requests before swap ${generation}`).toBeGreaterThan(0);
      expect(after.length, `requests after swap ${generation}`).toBeGreaterThan(0);
      expect(new Set(before.map((o) => o.generation)), `before swap ${generation}`).toEqual(
        new Set([generation - 1]),
      );
      expect(new Set(after.map((o) => o.generation)), `after swap ${generation}`).toEqual(
        new Set([generation]),
      );
    }
  });

  it('keeps choosing the set by client through the swaps: its own when listed, else the default', () => {
    const sets = (client: string) =>
      new Set(outcomes.filter((o) => o.client === client).map((o) => o.set));
    expect(sets('spa-demo')).toEqual(new Set(['spa-demo']));
    expect(sets('partner-app')).toEqual(new Set(['default']));
  });
});

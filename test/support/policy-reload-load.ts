// Hot reload under load (issue 36): `npm start`'s stack with a policy file, steady /secret traffic
// with a token every version allows (keep-alive clients in this process, and with `locustUsers` the
// study's locust load beside them), and a probe token some versions refuse, while the policy file
// is replaced again and again (stricter, broken, looser, a change only a restart applies). Each
// version the verifier acknowledged is read from its log (time, digest) and its file (what it
// allows); then every answer is held to the rule: a token every version allows never fails, and
// the probe's answer is the answer of a version live at some moment from the request's start minus
// the edge bound (NGINX may reuse an answer for VERIFIER_EDGE_CACHE_TTL, whole seconds) to its end.
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { runLocust } from '../../perf/locust.js';
import { parseLocustCsv } from '../../perf/locust-csv.js';
import { writeTokenFile } from '../../perf/tokens.js';
import { startStack } from '../../stack/start-stack.js';
import { configDigest } from '../../verifier/src/reloader.js';

const SECRETS = {
  default: { 'x-api-key': 'reload-load-default' },
  clients: {},
  policies: { payments: { default: { 'payments-key': 'reload-load-payments' }, clients: {} } },
};
const policy = (clients: string[]) => ({ scopes: ['secrets:read'], clients });
const version = (clients: string[], extra: Record<string, unknown> = {}) => ({
  policies: { secret: policy(clients), payments: policy(['spa-demo']) },
  ...extra,
});
const STRICTER = version(['spa-demo']);
const LOOSER = version(['spa-demo', 'partner-app']);
/** Ten replacements: valid ones both ways, and three the runner or the verifier refuses. */
export const REPLACEMENTS: ReadonlyArray<readonly [string, unknown]> = [
  ['stricter', STRICTER],
  ['broken: not JSON', '{ "policies": '],
  ['looser', LOOSER],
  ['broken: unknown field', version(['spa-demo'], { polices: {} })],
  ['stricter', STRICTER],
  ['looser', LOOSER],
  [
    'refused: a setting only a restart applies',
    version(['spa-demo'], { cache: { maxEntries: 5000 } }),
  ],
  ['stricter', STRICTER],
  ['looser', LOOSER],
  ['stricter', STRICTER],
];
/** NGINX's edge cache TTL in this run, seconds. */
const EDGE_TTL = 1;
/** How long after the verifier's acknowledgement an older answer may still come: the TTL, whole seconds. */
export const EDGE_BOUND_MS = (EDGE_TTL + 1) * 1000;

export interface ReloadLoadOptions {
  /** How long each version stays before the next replacement. */
  readonly holdMs: number;
  /** Concurrent keep-alive clients sending the allowed token. */
  readonly clients: number;
  /** Rounds of the ten replacements. */
  readonly rounds?: number;
  /** Users of the study's locust scenario (/hello and /secret, 0–1 s waits) run beside, with the allowed token. */
  readonly locustUsers?: number;
  readonly log?: (line: string) => void;
}

export interface ReloadLoadReport {
  readonly requests: number;
  /** The locust load's totals, when it ran: every failure is a request of the allowed token. */
  readonly locust?: { readonly requests: number; readonly failures: number };
  /** Answers other than 200 to the token every version allows. */
  readonly failures: ReadonlyArray<{ at: number; status: number | string }>;
  readonly probes: number;
  /** Probe answers no version live in the window could have given. */
  readonly stale: ReadonlyArray<{ at: number; status: number | string; allowed: number[] }>;
  /** Versions the verifier applied after the start, and refusals it counted. */
  readonly applied: number;
  readonly refusedByVerifier: number;
  readonly runnerLog: readonly string[];
}

interface Answer {
  readonly start: number;
  readonly end: number;
  readonly status: number | string;
}

function send(agent: Agent, url: string, token: string): Promise<Answer> {
  const start = Date.now();
  return new Promise((resolve) => {
    const done = (status: number | string) => resolve({ start, end: Date.now(), status });
    const request = get(url, { agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
      res.resume();
      res.on('end', () => done(res.statusCode ?? 0));
      res.on('error', (error: NodeJS.ErrnoException) => done(error.code ?? error.name));
    });
    request.setTimeout(10_000, () => request.destroy(new Error('timeout')));
    request.on('error', (error: NodeJS.ErrnoException) => done(error.code ?? error.name));
  });
}

/** Keeps asking until `stop` is set; a closed keep-alive connection (NGINX reload) is retried once, as a browser does. */
async function loop(
  url: string,
  token: string,
  into: Answer[],
  stop: { now: boolean },
  pauseMs: number,
) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  while (!stop.now) {
    const first = await send(agent, url, token);
    into.push(typeof first.status === 'string' ? await send(agent, url, token) : first);
    if (pauseMs > 0) await sleep(pauseMs);
  }
  agent.destroy();
}

export async function runReloadUnderLoad(options: ReloadLoadOptions): Promise<ReloadLoadReport> {
  const log = options.log ?? (() => {});
  const dir = mkdtempSync(join(tmpdir(), 'sg-reload-load-'));
  const secretsFile = join(dir, 'secrets.json');
  writeFileSync(secretsFile, JSON.stringify(SECRETS), { mode: 0o644 });
  const policyFile = join(dir, 'policies.json');
  writeFileSync(policyFile, JSON.stringify(LOOSER));
  const runnerLog: string[] = [];
  const stack = await startStack({
    secretsFile,
    policyFile,
    verifierVariables: { VERIFIER_EDGE_CACHE_TTL: `${EDGE_TTL}s` },
    log: (line) => runnerLog.push(line),
  });
  try {
    const url = `${stack.urls.gate}/secret`;
    const allowed = await stack.mintToken({ clientId: 'spa-demo' });
    const probe = await stack.mintToken({ clientId: 'partner-app' });
    // What each verifier file the run wrote allows the probe, by digest (sampled while it runs).
    const allowsProbe = new Map<string, boolean>();
    const sample = () => {
      const text = readFileSync(stack.files.verifierConfig, 'utf8');
      try {
        const clients = (JSON.parse(text) as typeof LOOSER).policies.secret.clients;
        allowsProbe.set(configDigest(text), clients.includes('partner-app'));
      } catch {
        // A file the verifier refuses is never live.
      }
    };
    sample();
    const stop = { now: false };
    const steady: Answer[] = [];
    const probes: Answer[] = [];
    const sampler = (async () => {
      while (!stop.now) {
        sample();
        await sleep(50);
      }
    })();
    // Each client paced to at most 200 requests a second: together they stay under NGINX's
    // per-address limit (SG_SECRET_RATE), which this run is not about, however fast the machine.
    const loops = [
      ...Array.from({ length: options.clients }, () => loop(url, allowed, steady, stop, 5)),
      loop(url, probe, probes, stop, 20),
    ];
    const rounds = options.rounds ?? 1;
    const locust =
      options.locustUsers &&
      startLocustLoad(stack.urls.gate, allowed, dir, {
        users: options.locustUsers,
        seconds: Math.ceil((rounds * REPLACEMENTS.length * options.holdMs) / 1000),
      });
    for (let round = 0; round < rounds; round++)
      for (const [name, content] of REPLACEMENTS) {
        writeFileSync(
          `${policyFile}.tmp`,
          typeof content === 'string' ? content : JSON.stringify(content),
        );
        renameSync(`${policyFile}.tmp`, policyFile);
        log(`replaced the policy file: ${name}`);
        await sleep(options.holdMs);
      }
    stop.now = true;
    await Promise.all([...loops, sampler]);
    const locustTotals = locust ? await locust : undefined;

    // The versions live over time: the start's, then each the verifier logged as applied.
    const lines = readFileSync(stack.files.logs.verifier, 'utf8').split('\n').filter(Boolean);
    const events = lines.map(
      (line) => JSON.parse(line) as { time: number; msg: string; digest?: string },
    );
    const applied = events.filter((event) => event.msg === 'configuration reloaded');
    const timeline = [
      { at: 0, allows: true },
      ...applied.map((event) => ({ at: event.time, allows: allowsProbe.get(event.digest ?? '') })),
    ];
    const expected = (answer: Answer): number[] => {
      const from = answer.start - EDGE_BOUND_MS;
      const live = timeline.filter(
        (entry, index) => entry.at <= answer.end && (timeline[index + 1]?.at ?? Infinity) >= from,
      );
      // A version whose file was not sampled (replaced within 50 ms) may have said either.
      return [
        ...new Set(
          live.flatMap((entry) =>
            entry.allows === undefined ? [200, 403] : [entry.allows ? 200 : 403],
          ),
        ),
      ];
    };
    return {
      requests: steady.length,
      ...(locustTotals && { locust: locustTotals }),
      failures: steady
        .filter((answer) => answer.status !== 200)
        .map(({ start, status }) => ({ at: start, status })),
      probes: probes.length,
      stale: probes
        .map((answer) => ({ at: answer.start, status: answer.status, allowed: expected(answer) }))
        .filter(({ status, allowed }) => typeof status !== 'number' || !allowed.includes(status)),
      applied: applied.length,
      refusedByVerifier: events.filter((event) =>
        event.msg.startsWith('configuration change refused'),
      ).length,
      runnerLog,
    };
  } finally {
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The study's locust scenario against the gate with one token; its Aggregated totals once it ends. */
async function startLocustLoad(
  host: string,
  token: string,
  dir: string,
  load: { users: number; seconds: number },
) {
  const tokenFile = join(dir, 'tokens.txt');
  writeTokenFile(tokenFile, [token]);
  const csvPrefix = join(dir, 'locust');
  await runLocust(
    {
      host,
      users: load.users,
      spawnRate: load.users,
      durationSeconds: load.seconds,
      tokenFile,
      csvPrefix,
      htmlFile: join(dir, 'locust.html'),
      logFile: join(dir, 'locust.log'),
      cpus: '0-1',
    },
    () => {},
  );
  const total = parseLocustCsv(readFileSync(`${csvPrefix}_stats.csv`, 'utf8')).find(
    (row) => row.Name === 'Aggregated',
  );
  if (total === undefined)
    throw new Error(`locust wrote no totals; see ${join(dir, 'locust.log')}`);
  return { requests: Number(total['Request Count']), failures: Number(total['Failure Count']) };
}

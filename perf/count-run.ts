// `npm run bench:counts` (and the counts section of `npm run bench`): the real stack from stack/,
// its rendered NGINX configuration counted per request for each kind of request. System calls
// first, from strace on the stack's own worker; then the stack's NGINX is swapped for the same
// configuration as one process under callgrind for the instructions (swapped last, since that
// process does not drop privileges, and under root would leave cache files the unprivileged
// worker cannot read). The CloudFront row runs on a second stack whose NGINX is rendered with
// SG_CLOUDFRONT_COOKIES=on.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SECRET_POLICY } from '../stack/service-env.js';
import { findNginx } from '../stack/prerequisites.js';
import { startStack, REPO_ROOT, type Stack } from '../stack/start-stack.js';
import { createDpopClient } from './dpop-proofs.js';
import { createKeepAliveClient, type KeepAliveClient } from './keepalive-client.js';
import {
  evaluateCountGoals,
  formatCounts,
  syscallsPerRequest,
  type CountRow,
} from './nginx-counts.js';
import { countSyscalls, startCallgrindNginx } from './nginx-counters.js';
import { childrenOf, LOAD_TEST_NGINX_ENV, LOAD_TEST_VERIFIER_ENV } from './systems.js';
import { mintTokens } from './tokens.js';

export const COUNT_ROW_NAMES = {
  hello: '/hello (return 200)',
  cached: '/secret, edge-cache hit',
  miss: '/secret, edge-cache miss (a new token each)',
  dpop: '/secret, cached DPoP token, a fresh proof each',
  cloudFront: '/secret, edge-cache hit, CloudFront cookies',
} as const;

export interface CountRunOptions {
  /** Requests counted per row (and per counter). */
  readonly requests: number;
  /** Requests of the same kind sent first on the same connection, uncounted. */
  readonly warmup: number;
  /** Scratch directory for the stack, the dumps and the summaries. */
  readonly dir: string;
  readonly log?: (line: string) => void;
  /** Only these rows (COUNT_ROW_NAMES values); all when unset. */
  readonly rows?: readonly string[];
  /** More NGINX settings for every stack (`SG_TRACE_CONTEXT=on`, for bench:tracing). */
  readonly nginxEnv?: Readonly<Record<string, string>>;
}

interface Request {
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/** One phase's traffic of a row: fresh material, since tokens and proofs are used up. */
interface Traffic {
  readonly warmup: (i: number) => Request;
  readonly measured: (i: number) => Request;
}

interface RowPlan {
  readonly name: string;
  readonly status: number;
  /** Runs the row on CloudFront's configuration: the verifier's section and SG_CLOUDFRONT_COOKIES=on. */
  readonly cloudFront: boolean;
  prepare(stack: Stack, options: CountRunOptions): Promise<Traffic>;
}

const same = (request: Request): Traffic => ({ warmup: () => request, measured: () => request });
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/** The repository's fixed CloudFront test key, as the NGINX integration suite configures it. */
const CLOUDFRONT_SECTION = {
  keyPairId: 'K2JCJMDEHXQW5F',
  privateKeyFile: join(REPO_ROOT, 'test/fixtures/cloudfront/rsa-2048.pkcs8.pem'),
  algorithm: 'RSA-SHA256',
  resource: 'https://cdn.example.test/private/*',
  ttlSeconds: 300,
  cookieDomain: 'cdn.example.test',
};

const ROWS: readonly RowPlan[] = [
  {
    name: COUNT_ROW_NAMES.hello,
    status: 200,
    cloudFront: false,
    prepare: () => Promise.resolve(same({ path: '/hello' })),
  },
  {
    name: COUNT_ROW_NAMES.cached,
    status: 200,
    cloudFront: false,
    // The first warm-up request fills the edge cache; every counted one is a hit.
    prepare: async (stack) => same({ path: '/secret', headers: bearer(await stack.mintToken()) }),
  },
  {
    name: COUNT_ROW_NAMES.miss,
    status: 200,
    cloudFront: false,
    async prepare(stack, options) {
      const tokens = await mintTokens({
        issuer: stack.urls.issuer,
        count: options.warmup + options.requests,
      });
      const at = (i: number) => ({ path: '/secret', headers: bearer(tokens[i]!) });
      return { warmup: at, measured: (i) => at(options.warmup + i) };
    },
  },
  {
    name: COUNT_ROW_NAMES.dpop,
    status: 200,
    cloudFront: false,
    async prepare(stack, options) {
      const client = await createDpopClient(stack.urls.issuer);
      const proofs = await client.proofs(stack.urls.secret, options.warmup + options.requests);
      const at = (i: number) => ({
        path: '/secret',
        headers: { Authorization: `DPoP ${client.token}`, DPoP: proofs[i]! },
      });
      return { warmup: at, measured: (i) => at(options.warmup + i) };
    },
  },
  {
    name: COUNT_ROW_NAMES.cloudFront,
    status: 200,
    cloudFront: true,
    async prepare(stack) {
      const token = await stack.mintToken();
      // The row counts what it says only if the answer carries the cookies.
      const reply = await fetch(stack.urls.secret, { headers: bearer(token) });
      await reply.arrayBuffer();
      if (!reply.headers.getSetCookie().some((c) => c.startsWith('CloudFront-Policy='))) {
        throw new Error(`/secret answered ${reply.status} without CloudFront cookies`);
      }
      return same({ path: '/secret', headers: bearer(token) });
    },
  },
];

/** Rewrites the verifier's configuration with or without the CloudFront section and restarts it. */
async function useCloudFront(stack: Stack, on: boolean): Promise<void> {
  const file = stack.files.verifierConfig;
  const config = JSON.parse(readFileSync(file, 'utf8')) as {
    policies: Record<string, Record<string, unknown>>;
  };
  const policy = config.policies[SECRET_POLICY]!;
  const present = 'cloudfront' in policy;
  if (on === present) return;
  if (on) policy.cloudfront = CLOUDFRONT_SECTION;
  else delete policy.cloudfront;
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`);
  await stack.stopService('verifier');
  await stack.startService('verifier');
}

/** Warms the connection up, then runs `counted` around exactly `requests` requests on it. */
async function onOneConnection(
  stack: Stack,
  plan: RowPlan,
  options: CountRunOptions,
  counted: (send: () => Promise<void>) => Promise<void>,
): Promise<void> {
  const traffic = await plan.prepare(stack, options);
  const client: KeepAliveClient = createKeepAliveClient(stack.urls.gate);
  try {
    await client.send(options.warmup, traffic.warmup, plan.status);
    await counted(() => client.send(options.requests, traffic.measured, plan.status));
  } finally {
    client.close();
  }
}

/**
 * Counts every row. NGINX looks the CloudFront values up only when its configuration says so
 * (`SG_CLOUDFRONT_COOKIES=on`, rendered at start), so the rows run on two stacks: the CloudFront
 * row on one rendered with it on, every other row on the default configuration, as deployed.
 */
export async function runNginxCounts(options: CountRunOptions): Promise<CountRow[]> {
  const counted = new Map<string, CountRow>();
  const wanted = ROWS.filter((plan) => options.rows?.includes(plan.name) ?? true);
  for (const cloudFront of [false, true]) {
    const plans = wanted.filter((plan) => plan.cloudFront === cloudFront);
    if (plans.length === 0) continue;
    for (const row of await countOnOneStack(plans, cloudFront, options)) counted.set(row.name, row);
  }
  return wanted.map((plan) => counted.get(plan.name)!);
}

/** Counts `plans` on a stack of their own; the stack is started and stopped here. */
async function countOnOneStack(
  plans: readonly RowPlan[],
  cloudFront: boolean,
  options: CountRunOptions,
): Promise<CountRow[]> {
  const log = options.log ?? (() => {});
  const nginx = await findNginx();
  // A directory per stack: callgrind numbers its dumps from 1 in each process, so the second
  // stack's would overwrite the first's (kept with SG_BENCH_KEEP for callgrind_annotate).
  const dir = join(options.dir, cloudFront ? 'cloudfront' : 'default');
  mkdirSync(dir, { recursive: true });
  const stack = await startStack({
    runtimeDir: join(dir, 'stack'),
    env: {
      nginx: {
        ...LOAD_TEST_NGINX_ENV,
        SG_WORKER_PROCESSES: '1',
        SG_CLOUDFRONT_COOKIES: cloudFront ? 'on' : 'off',
        ...options.nginxEnv,
      },
      // The DPoP rows' proofs are signed before their row starts.
      verifier: {
        ...LOAD_TEST_VERIFIER_ENV,
        VERIFIER_DPOP_IAT_WINDOW: '10m',
        VERIFIER_LOG_LEVEL: 'warn',
      },
    },
  });
  const syscalls = new Map<string, Map<string, number>>();
  const instructions = new Map<string, number>();
  try {
    await useCloudFront(stack, cloudFront);
    // The master's children are its worker and the cache manager and loader.
    const workers = childrenOf(stack.pid('nginx')!).filter((pid) =>
      readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('nginx: worker process'),
    );
    if (workers.length !== 1) throw new Error(`expected one NGINX worker, found ${workers.length}`);
    for (const [index, plan] of plans.entries()) {
      const summary = join(dir, `strace-${index}.txt`);
      await onOneConnection(stack, plan, options, async (send) => {
        syscalls.set(plan.name, await countSyscalls(workers[0]!, summary, send));
      });
      log(`counted system calls: ${plan.name}`);
    }
    await stack.stopService('nginx');
    const callgrind = await startCallgrindNginx({
      binary: nginx.binary,
      prefix: stack.files.nginxPrefix,
      confFile: stack.files.nginxConf,
      env: stack.env.nginx,
      outDir: dir,
      readyUrl: stack.urls.hello,
    });
    try {
      // The first zero-to-dump of a callgrind process counts ~250,000 instructions more than any
      // later one (its own first command, NGINX's first timers): a priming round of the first
      // kind takes it, so every counted row, the first included, holds only its requests.
      await onOneConnection(stack, plans[0]!, options, async (send) => {
        await callgrind.zero();
        await send();
        await callgrind.dump(`${cloudFront ? 'cf-' : ''}prime`);
      });
      for (const [index, plan] of plans.entries()) {
        await onOneConnection(stack, plan, options, async (send) => {
          await callgrind.zero();
          await send();
          instructions.set(
            plan.name,
            await callgrind.dump(`${cloudFront ? 'cf-' : ''}row${index}`),
          );
        });
        log(`counted instructions: ${plan.name}`);
      }
    } finally {
      await callgrind.stop();
    }
  } finally {
    await stack.stop();
  }
  return plans.map((plan) => ({
    name: plan.name,
    requests: options.requests,
    instructions: instructions.get(plan.name)! / options.requests,
    syscalls: syscallsPerRequest(syscalls.get(plan.name)!, options.requests),
  }));
}

/** The counted table with the goals for the rows above. */
export function formatCountRun(rows: readonly CountRow[]): string {
  return formatCounts(
    rows,
    evaluateCountGoals(rows, { floor: COUNT_ROW_NAMES.hello, cached: COUNT_ROW_NAMES.cached }),
  );
}

// `npm run bench`: wrk on one core, one NGINX worker and the verifier (or a baseline gate) on the
// other, every row in one run so the ratios compare like with like on a noisy shared machine.
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  evaluateBenchGoals,
  formatBench,
  ROW_NAMES,
  withRatios,
  type BenchRow,
} from '../perf/bench-goals.js';
import { BENCH_USAGE, parseBenchOptions, type BenchOptions } from '../perf/bench-options.js';
import { createDpopClient } from '../perf/dpop-proofs.js';
import { createPublicKey, verify } from 'node:crypto';
import { runWrk, type WrkResult, type WrkRun } from '../perf/wrk.js';
import { createConfinement, PROFILES } from '../perf/limits.js';
import { COUNT_DEFAULTS } from '../perf/count-options.js';
import { formatCountRun, runNginxCounts } from '../perf/count-run.js';
import type { CountRow } from '../perf/nginx-counts.js';
import { assertCountTools } from '../perf/prerequisites.js';
import { createScratchDir } from '../perf/scratch.js';
import { createUsageSampler } from '../perf/process-stats.js';
import { startSystem, type SystemInstance } from '../perf/systems.js';
import { mintTokens, writeTokenFile } from '../perf/tokens.js';

const SERVICE_CPUS = '1';
const LOAD_CPUS = '0';
/**
 * The all-distinct row cycles a pool three times larger than the verifier's decision cache: an
 * LRU read in a cycle longer than its capacity never hits, so every request is a full RS256
 * verification, as with tokens never seen before — without minting a token per request from a
 * dev IdP that signs ~100 per second. NGINX's edge cache is off for that row (it would serve the
 * pool's repeats).
 */
const DISTINCT_CACHE_ENTRIES = 500;
const DISTINCT_POOL = 3 * DISTINCT_CACHE_ENTRIES;
const WARMUP_SECONDS = 1;

type Row = Omit<BenchRow, 'ratio'>;

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

async function expectStatus(url: string, status: number, authorization?: string): Promise<void> {
  const reply = await fetch(url, { headers: authorization ? { authorization } : {} });
  const body = await reply.text();
  if (reply.status !== status) {
    throw new Error(`${url} answered ${reply.status} ${body.slice(0, 100)}, expected ${status}`);
  }
}

async function measure(
  name: string,
  options: BenchOptions,
  system: SystemInstance,
  run: Pick<WrkRun, 'url' | 'headers' | 'tokenFile' | 'dpop'> & {
    /** Another token file for the warm-up (DPoP proofs must not be reused by the measured run). */
    warmupTokenFile?: string;
  },
  notes: string[],
): Promise<Row> {
  const base = { ...run, connections: options.connections, cpus: LOAD_CPUS };
  await runWrk({
    ...base,
    tokenFile: run.warmupTokenFile ?? run.tokenFile,
    durationSeconds: WARMUP_SECONDS,
  });
  const sampler = createUsageSampler(new Map(system.services.map((s) => [s.name, s.pids])));
  const result: WrkResult = await runWrk({ ...base, durationSeconds: options.durationSeconds });
  const cpu_us = Object.fromEntries(
    sampler.stop().map((usage) => [usage.name, (usage.cpuSeconds * 1e6) / result.requests]),
  );
  if (result.errors > 0)
    notes.push(`${name}: ${result.errors} of ${result.requests} requests failed`);
  log(
    `${name}: ${result.rps.toFixed(0)} req/s, p50 ${result.p50Ms.toFixed(2)} ms, p99 ${result.p99Ms.toFixed(2)} ms`,
  );
  return { name, rps: result.rps, p50_ms: result.p50Ms, p99_ms: result.p99Ms, cpu_us };
}

/**
 * /secret with one DPoP-bound token whose decision the verifier caches and a proof per request, so
 * the row costs one ES256 proof verification (and one replay-store write) per request on top of
 * the cached bearer row. The proof pool is sized from that row's rate, so it is never exhausted.
 */
async function measureDpop(
  options: BenchOptions,
  system: SystemInstance,
  bearerRps: number,
  scratch: string,
  notes: string[],
): Promise<Row> {
  const secret = `${system.baseUrl}/secret`;
  const client = await createDpopClient(system.issuer);
  const authorization = `DPoP ${client.token}`;
  const warmupFile = join(scratch, 'dpop-warmup.txt');
  const proofFile = join(scratch, 'dpop-proofs.txt');
  const perSecond = Math.ceil(Math.max(bearerRps, 1000) * 1.2);
  const [check, ...warmup] = await client.proofs(secret, perSecond * WARMUP_SECONDS + 1);
  writeTokenFile(warmupFile, warmup);
  writeTokenFile(proofFile, await client.proofs(secret, perSecond * options.durationSeconds));
  // The path end to end before wrk: no proof is a 401, one fresh proof the secret.
  await expectStatus(secret, 401, authorization);
  const checked = await fetch(secret, { headers: { Authorization: authorization, DPoP: check! } });
  await checked.body?.cancel();
  if (checked.status !== 200)
    throw new Error(`/secret with a DPoP proof answered ${checked.status}`);
  const floor = bareProofVerifyUs(warmup.slice(0, 3000));
  notes.push(
    `cached DPoP: a token bound by the dev IdP, ${perSecond} fresh ES256 proofs per second of run (each used once); ` +
      `a bare ES256 crypto.verify of one proof costs ${floor.toFixed(0)} µs here (3,000 proofs, in-process)`,
  );
  const row = await measure(
    ROW_NAMES.cachedDpop,
    options,
    system,
    {
      url: secret,
      headers: { Authorization: authorization },
      tokenFile: proofFile,
      warmupTokenFile: warmupFile,
      dpop: true,
    },
    notes,
  );
  return { ...row, crypto_floor_us: floor };
}

/** CPU µs of a bare `crypto.verify` of each proof's signature with its own key, prepared once. */
function bareProofVerifyUs(proofs: readonly string[]): number {
  const header = JSON.parse(Buffer.from(proofs[0]!.split('.')[0]!, 'base64url').toString()) as {
    jwk: import('node:crypto').JsonWebKey;
  };
  const key = createPublicKey({ key: header.jwk, format: 'jwk' });
  const parts = proofs.map((proof) => {
    const dot = proof.lastIndexOf('.');
    return [Buffer.from(proof.slice(0, dot)), Buffer.from(proof.slice(dot + 1), 'base64url')];
  });
  const before = process.cpuUsage();
  for (const [input, signature] of parts)
    if (!verify('sha256', input!, { key, dsaEncoding: 'ieee-p1363' }, signature!))
      throw new Error('a proof did not verify');
  const used = process.cpuUsage(before);
  return (used.user + used.system) / parts.length;
}

async function withSystem<T>(
  instance: Promise<SystemInstance>,
  body: (system: SystemInstance) => Promise<T>,
): Promise<T> {
  const system = await instance;
  try {
    return await body(system);
  } finally {
    await system.stop();
  }
}

async function main(): Promise<number> {
  let options: BenchOptions;
  try {
    options = parseBenchOptions(process.argv.slice(2));
  } catch (error) {
    console.error(`${(error as Error).message}\n\n${BENCH_USAGE}`);
    return 2;
  }
  if (options.help) {
    console.log(BENCH_USAGE);
    return 0;
  }
  if (options.counts) assertCountTools();
  const scratch = createScratchDir('bench');
  // Pinning only: the benchmark measures what one core gives, not a CPU quota.
  const confinement = createConfinement({
    profile: PROFILES.study,
    cpus: SERVICE_CPUS,
    support: { mode: 'pin', reason: 'the benchmark pins, it does not limit' },
  });
  const rows: Row[] = [];
  let counts: CountRow[] = [];
  const notes: string[] = [
    `all-distinct: a pool of ${DISTINCT_POOL} dev-IdP tokens cycled with VERIFIER_CACHE_MAX_ENTRIES=${DISTINCT_CACHE_ENTRIES}, and the edge cache off, so every request reaches the verifier and misses its cache`,
  ];
  try {
    const ours = startSystem('ours', {
      dir: join(scratch, 'ours'),
      confinement,
      nginxEnv: { SG_WORKER_PROCESSES: '1' },
      verifierEnv: {
        // The DPoP row's proofs are signed before the run starts; they must stay young enough.
        VERIFIER_DPOP_IAT_WINDOW: '10m',
      },
    });
    await withSystem(ours, async (system) => {
      const [cached] = await mintTokens({ issuer: system.issuer, count: 1 });
      const secret = `${system.baseUrl}/secret`;
      await expectStatus(secret, 200, `Bearer ${cached}`);
      await expectStatus(secret, 401);
      rows.push(
        await measure(
          ROW_NAMES.ceiling,
          options,
          system,
          { url: `${system.baseUrl}/hello` },
          notes,
        ),
      );
      rows.push(
        await measure(
          ROW_NAMES.cached,
          options,
          system,
          { url: secret, headers: { Authorization: `Bearer ${cached}` } },
          notes,
        ),
      );
      rows.push(await measureDpop(options, system, rows.at(-1)?.rps ?? 0, scratch, notes));
    });
    // All-distinct tokens on a gate of its own with NGINX's edge cache off: a pool small enough to
    // mint comes round again within the edge cache's few seconds and would be served from it.
    await withSystem(
      startSystem('ours', {
        dir: join(scratch, 'ours-distinct'),
        confinement,
        nginxEnv: { SG_WORKER_PROCESSES: '1', SG_EDGE_CACHE: 'off' },
        verifierEnv: { VERIFIER_CACHE_MAX_ENTRIES: String(DISTINCT_CACHE_ENTRIES) },
      }),
      async (system) => {
        log(`ours (distinct) at ${system.baseUrl}; minting ${DISTINCT_POOL} tokens`);
        const tokenFile = join(scratch, 'tokens.txt');
        writeTokenFile(
          tokenFile,
          await mintTokens({ issuer: system.issuer, count: DISTINCT_POOL }),
        );
        const secret = `${system.baseUrl}/secret`;
        rows.push(
          await measure(ROW_NAMES.distinct, options, system, { url: secret, tokenFile }, notes),
        );
      },
    );
    /** /secret of a freshly started system with one token, which its gate caches. */
    const oneTokenRow = (rowName: string, instance: Promise<SystemInstance>) =>
      withSystem(instance, async (system) => {
        const [token] = await mintTokens({ issuer: system.issuer, count: 1 });
        const secret = `${system.baseUrl}/secret`;
        await expectStatus(secret, 200, `Bearer ${token}`);
        rows.push(
          await measure(
            rowName,
            options,
            system,
            { url: secret, headers: { Authorization: `Bearer ${token}` } },
            notes,
          ),
        );
      });
    // The hot path without NGINX's edge decision cache: every request reaches the verifier's own
    // decision cache, so the row shows what the edge cache saves.
    await oneTokenRow(
      ROW_NAMES.cachedNoEdge,
      startSystem('ours', {
        dir: join(scratch, 'no-edge'),
        confinement,
        nginxEnv: { SG_WORKER_PROCESSES: '1', SG_EDGE_CACHE: 'off' },
      }),
    );
    const baselines = [
      ['study-njs', ROW_NAMES.studyNjs],
      ['study-node', ROW_NAMES.studyNode],
      ['njs-verify', ROW_NAMES.njsVerify],
    ] as const;
    for (const [name, rowName] of baselines) {
      mkdirSync(join(scratch, name), { recursive: true });
      await oneTokenRow(rowName, startSystem(name, { dir: join(scratch, name), confinement }));
    }
    // Counted, not timed: NGINX's instructions and system calls per request of our configuration.
    if (options.counts) {
      log('counting NGINX per request (callgrind, strace)');
      counts = await runNginxCounts({ ...COUNT_DEFAULTS, dir: join(scratch, 'counts'), log });
    }
  } finally {
    await confinement.release();
    if (!process.env.SG_BENCH_KEEP) rmSync(scratch, { recursive: true, force: true });
  }

  const ratioed = withRatios(rows);
  if (options.json) {
    console.log(JSON.stringify({ rows: ratioed, counts }));
  } else {
    console.log(formatBench(ratioed, evaluateBenchGoals(ratioed), notes));
    if (counts.length > 0) {
      console.log(
        `\nNGINX per request, counted (npm run bench:counts: ${COUNT_DEFAULTS.requests} requests per row):\n${formatCountRun(counts)}`,
      );
    }
  }
  return 0;
}

process.exitCode = await main();

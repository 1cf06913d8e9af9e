// bench:tracing's gate rows: what tracing costs a user's gate, measured as `npm run bench` measures
// it, through real NGINX (one worker) and the built verifier on one pinned core, wrk on the other.
// The verifier-only rows (bench/tracing.ts) stay the stricter figure: here NGINX's own work, and on
// the cached row its edge cache, which answers most requests without asking the verifier, are in
// the denominator too. Modes, one gate each, all started at once and measured in rotated order:
//   off             SG_TRACE_CONTEXT=off, no OTEL_*: the deployed default
//   context only    SG_TRACE_CONTEXT=on, no OTEL_*: NGINX's traceparent and log fields alone
//   1 % / 100 %     SG_TRACE_CONTEXT=on with SG_TRACE_SAMPLE_PERCENT 1 / 100, and the verifier
//                   exporting to this process's OTLP receiver (http/protobuf, default OTEL_BSP_*)
// Rows: cached `/secret` (one token, edge cache on) and all-distinct (a pool of dev-IdP tokens
// three times the verifier's decision cache, edge cache off, so every request is a full RS256
// verification), as bench/gate.ts. A mode's cost is the median over rounds of its NGINX + verifier
// CPU per request against `off`'s in the same round, the lowest and highest round beside it.
import { join } from 'node:path';
import { createConfinement, PROFILES, type Confinement } from '../perf/limits.js';
import { createUsageSampler } from '../perf/process-stats.js';
import { startSystem, type SystemInstance } from '../perf/systems.js';
import { mintTokens, writeTokenFile } from '../perf/tokens.js';
import { runWrk, type WrkRun } from '../perf/wrk.js';

// As the verifier rows: servers on core 0, wrk and the bench process (the OTLP receiver) on 1.
const SERVICE_CPUS = '0';
const LOAD_CPUS = '1';
/** As bench/gate.ts: a pool cycled through a decision cache a third of its size never hits. */
const DISTINCT_CACHE_ENTRIES = 500;
const DISTINCT_POOL = 3 * DISTINCT_CACHE_ENTRIES;
const CONNECTIONS = 32;

interface GateMode {
  readonly name: string;
  /** SG_TRACE_SAMPLE_PERCENT with SG_TRACE_CONTEXT=on; undefined: SG_TRACE_CONTEXT=off. */
  readonly percent: number | undefined;
  readonly otel: boolean;
}
const GATE_MODES: readonly GateMode[] = [
  { name: 'off', percent: undefined, otel: false },
  { name: 'context only', percent: 0, otel: false },
  { name: '1 %', percent: 1, otel: true },
  { name: '100 %', percent: 100, otel: true },
];
/** Issue 37's goals, against `off`. */
/** "≤ 5 %: met" or "MISSED" for the worse of a mode's cost ratios against off; '' with no goal. */
export function goalVerdict(limit: number | undefined, worstRatio: number): string {
  if (limit === undefined) return '';
  return worstRatio - 1 <= limit / 100 ? `≤ ${limit} %: met` : `≤ ${limit} %: MISSED`;
}

const GOALS: Readonly<Record<string, number>> = { '1 %': 5, '100 %': 15 };

export interface GateRowsOptions {
  /** The OTLP receiver's base URL (in the bench process). */
  readonly otlp: string;
  readonly seconds: number;
  readonly rounds: number;
  /** Scratch directory for the stacks. */
  readonly dir: string;
  readonly log: (line: string) => void;
}

interface Sample {
  readonly rps: number;
  /** NGINX + verifier CPU µs per request. */
  readonly cpu: number;
  readonly errors: number;
}

interface Gate {
  readonly mode: GateMode;
  readonly system: SystemInstance;
  readonly run: Pick<WrkRun, 'url' | 'headers' | 'tokenFile'>;
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
const percent = (ratio: number): string => `${((ratio - 1) * 100).toFixed(1)}`;

function startGate(
  mode: GateMode,
  row: 'cached' | 'distinct',
  options: GateRowsOptions,
  confinement: Confinement,
): Promise<SystemInstance> {
  return startSystem('ours', {
    dir: join(options.dir, `${row}-${GATE_MODES.indexOf(mode)}`),
    confinement,
    nginxEnv: {
      SG_WORKER_PROCESSES: '1',
      SG_TRACE_CONTEXT: mode.percent === undefined ? 'off' : 'on',
      ...(mode.percent === undefined ? {} : { SG_TRACE_SAMPLE_PERCENT: String(mode.percent) }),
      ...(row === 'distinct' ? { SG_EDGE_CACHE: 'off' } : {}),
    },
    verifierEnv: {
      ...(row === 'distinct' ? { VERIFIER_CACHE_MAX_ENTRIES: String(DISTINCT_CACHE_ENTRIES) } : {}),
      ...(mode.otel ? { OTEL_EXPORTER_OTLP_ENDPOINT: options.otlp } : {}),
    },
  });
}

async function measure(gate: Gate, seconds: number): Promise<Sample> {
  const run = { ...gate.run, connections: CONNECTIONS, cpus: LOAD_CPUS };
  const services = gate.system.services.filter((s) => s.name !== 'idp');
  const sampler = createUsageSampler(new Map(services.map((s) => [s.name, s.pids])));
  const result = await runWrk({ ...run, durationSeconds: seconds });
  const cpuSeconds = sampler.stop().reduce((sum, usage) => sum + usage.cpuSeconds, 0);
  return { rps: result.rps, cpu: (cpuSeconds * 1e6) / result.requests, errors: result.errors };
}

/** One row: a gate per mode, started together, warmed, then measured in rotated rounds. */
async function measureRow(
  row: 'cached' | 'distinct',
  options: GateRowsOptions,
  confinement: Confinement,
): Promise<Map<string, Sample[]>> {
  const gates: Gate[] = [];
  try {
    for (const mode of GATE_MODES) {
      const system = await startGate(mode, row, options, confinement);
      const url = `${system.baseUrl}/secret`;
      if (row === 'cached') {
        const [token] = await mintTokens({ issuer: system.issuer, count: 1 });
        gates.push({ mode, system, run: { url, headers: { Authorization: `Bearer ${token}` } } });
      } else {
        options.log(`gate ${mode.name}: minting ${DISTINCT_POOL} tokens`);
        const tokenFile = join(options.dir, `tokens-${GATE_MODES.indexOf(mode)}.txt`);
        writeTokenFile(
          tokenFile,
          await mintTokens({ issuer: system.issuer, count: DISTINCT_POOL }),
        );
        gates.push({ mode, system, run: { url, tokenFile } });
      }
    }
    for (const gate of gates) await measure(gate, 1);
    const samples = new Map<string, Sample[]>(GATE_MODES.map((mode) => [mode.name, []]));
    for (let round = 0; round < options.rounds; round++) {
      const line: string[] = [];
      for (let i = 0; i < gates.length; i++) {
        const gate = gates[(i + round) % gates.length]!;
        const sample = await measure(gate, options.seconds);
        samples.get(gate.mode.name)!.push(sample);
        line.push(`${gate.mode.name} ${sample.cpu.toFixed(1)}`);
      }
      options.log(`gate ${row} round ${round + 1} (µs CPU/req): ${line.join(', ')}`);
    }
    return samples;
  } finally {
    for (const gate of gates) await gate.system.stop();
  }
}

/** The gate rows' report lines: req/s, NGINX + verifier CPU per request and cost per mode. */
export async function gateRows(options: GateRowsOptions): Promise<string[]> {
  const confinement = createConfinement({
    profile: PROFILES.study,
    cpus: SERVICE_CPUS,
    support: { mode: 'pin', reason: 'the benchmark pins, it does not limit' },
  });
  let cached: Map<string, Sample[]>;
  let distinct: Map<string, Sample[]>;
  try {
    cached = await measureRow('cached', options, confinement);
    distinct = await measureRow('distinct', options, confinement);
  } finally {
    await confinement.release();
  }
  const lines = [
    `gate (real NGINX, one worker, + the verifier on cpu ${SERVICE_CPUS}; wrk -t1 -c${CONNECTIONS} on cpu ${LOAD_CPUS}), ${options.rounds} rounds of ${options.seconds} s per mode and row, modes rotated each round`,
    'cost: median over rounds of NGINX + verifier CPU/request against `off` in the same round (lowest..highest round)',
    'mode           cached req/s  µs CPU/req  cost %                 distinct req/s  µs CPU/req  cost %                 goal',
  ];
  const cell = (name: string, rows: Map<string, Sample[]>) => {
    const mine = rows.get(name)!;
    const off = rows.get('off')!;
    const ratios = mine.map((sample, round) => sample.cpu / off[round]!.cpu).sort((a, b) => a - b);
    const cost =
      name === 'off'
        ? '–'
        : `${percent(median(ratios)).padStart(6)} (${percent(ratios[0]!)}..${percent(ratios.at(-1)!)})`;
    return {
      cost: median(ratios),
      text: `${median(mine.map((s) => s.rps)).toFixed(0)}  ${median(mine.map((s) => s.cpu)).toFixed(1)}  ${cost}`,
    };
  };
  for (const mode of GATE_MODES) {
    const c = cell(mode.name, cached);
    const d = cell(mode.name, distinct);
    const met = goalVerdict(GOALS[mode.name], Math.max(c.cost, d.cost));
    lines.push(`${mode.name.padEnd(13)}  ${c.text.padStart(40)}  ${d.text.padStart(40)}  ${met}`);
    for (const [row, rows] of [
      ['cached', cached],
      ['distinct', distinct],
    ] as const)
      for (const sample of rows.get(mode.name)!)
        if (sample.errors > 0)
          lines.push(`warning: ${mode.name} ${row} had ${sample.errors} failed requests`);
  }
  return lines;
}

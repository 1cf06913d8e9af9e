// wrk as the benches' load generator: a process of its own (so the client's CPU never queues the
// answers it times), optionally pinned to a core, paced by a Lua `delay()` that hands out send
// slots at a fixed rate (an open loop while connections are free), and a `done()` that prints the
// answers by status and the latency percentiles, parsed here.
import { spawn, spawnSync } from 'node:child_process';

export interface WrkRun {
  /** Requests answered. */
  readonly requests: number;
  /** Answers by status, from the script's own count (wrk's summary only has "non-2xx"). */
  readonly statuses: ReadonlyMap<number, number>;
  /** Latency percentiles in milliseconds (p50, p90, p99), wrk's own (send to last byte). */
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  /** Wall seconds wrk ran. */
  readonly seconds: number;
}

/**
 * Lua that paces each wrk thread to `rate / threads` requests a second: every `delay()` claims
 * the thread's next slot (LuaJIT's ffi reads CLOCK_MONOTONIC; wrk's Lua has no finer clock than
 * `os.time`). A thread that fell more than a second behind starts afresh rather than bursting.
 */
export function pacing(rate: number, threads = 1): string {
  return `
local ffi = require("ffi")
ffi.cdef[[ typedef struct { long tv_sec; long tv_nsec; } sg_timespec; int clock_gettime(int, sg_timespec *); ]]
local sg_ts = ffi.new("sg_timespec")
local function sg_now() ffi.C.clock_gettime(1, sg_ts); return tonumber(sg_ts.tv_sec) * 1000 + tonumber(sg_ts.tv_nsec) / 1e6 end
local sg_period = ${(1000 * threads) / rate}
local sg_next = nil
delay = function()
  local t = sg_now()
  if sg_next == nil or sg_next < t - 1000 then sg_next = t end
  local slot = sg_next
  sg_next = sg_next + sg_period
  return math.max(0, slot - t)
end
`;
}

/** Lua that counts answers by status per thread and prints them with the percentiles at the end. */
export const REPORT = `
local sg_threads = {}
setup = function(thread) table.insert(sg_threads, thread) end
init = function() sg_counts = {} end
response = function(status) sg_counts[status] = (sg_counts[status] or 0) + 1 end
done = function(summary, latency)
  for _, t in ipairs(sg_threads) do
    for status, n in pairs(t:get("sg_counts")) do io.write(string.format("STATUS %d %d\\n", status, n)) end
  end
  io.write(string.format("REQUESTS %d SECONDS %f\\n", summary.requests, summary.duration / 1e6))
  io.write(string.format("LATENCY %f %f %f\\n", latency:percentile(50) / 1e3, latency:percentile(90) / 1e3, latency:percentile(99) / 1e3))
end
`;

/** A Lua string literal (the bodies and tokens the scripts send are ASCII). */
export const lua = (value: string) => JSON.stringify(value);

/** How a wrk run is started: its target, length and load, and where it runs. */
export interface WrkOptions {
  readonly url: string;
  readonly seconds: number;
  readonly connections: number;
  readonly threads?: number;
  /** A core to pin wrk to (`taskset -c`); undefined: anywhere. */
  readonly cpu?: string | undefined;
  /** Request headers (`Name: value`) every request carries. */
  readonly headers?: readonly string[];
  readonly script?: string;
  /** Arguments for the script's `init`. */
  readonly scriptArgs?: readonly string[];
}

/** wrk's command and arguments for `options` (under `taskset -c cpu` when given). */
export function wrkCommand(options: WrkOptions): [string, string[]] {
  const args = [
    `-t${options.threads ?? 1}`,
    `-c${options.connections}`,
    `-d${options.seconds}s`,
    ...(options.headers ?? []).flatMap((header) => ['-H', header]),
    ...(options.script === undefined ? [] : ['-s', options.script]),
    options.url,
    ...(options.scriptArgs === undefined ? [] : ['--', ...options.scriptArgs]),
  ];
  return options.cpu === undefined
    ? ['wrk', args]
    : ['taskset', ['-c', options.cpu, 'wrk', ...args]];
}

/** wrk's own summary of a run: requests answered, their rate, answers outside 2xx and 3xx. */
export interface WrkSummary {
  readonly requests: number;
  readonly rate: number;
  readonly non2xx: number;
}

/** The summary wrk prints at the end of a run (NaN where a figure is missing). */
export function wrkSummary(stdout: string): WrkSummary {
  return {
    requests: Number(/(\d+) requests in/.exec(stdout)?.[1] ?? NaN),
    rate: Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1] ?? NaN),
    non2xx: Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(stdout)?.[1] ?? 0),
  };
}

/**
 * Runs wrk to its end, blocking this process (for a server in another process); its summary and
 * its standard output. Throws when wrk fails.
 */
export function runWrkSync(options: WrkOptions): WrkSummary & { readonly stdout: string } {
  const [command, args] = wrkCommand(options);
  const run = spawnSync(command, args, { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`wrk failed: ${run.stderr}`);
  return { ...wrkSummary(run.stdout), stdout: run.stdout };
}

/**
 * Starts wrk with `script`, which must include REPORT (answers by status, percentiles); resolves
 * when it has run `seconds`.
 */
export function runWrk(options: WrkOptions & { readonly script: string }): Promise<WrkRun> {
  const [command, argv] = wrkCommand(options);
  return new Promise((resolve, reject) => {
    const child = spawn(command, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const totals = /REQUESTS (\d+) SECONDS ([\d.]+)/.exec(out);
      const latency = /LATENCY ([\d.]+) ([\d.]+) ([\d.]+)/.exec(out);
      if (code !== 0 || totals === null || latency === null)
        return reject(new Error(`wrk failed (${code}): ${err || out}`));
      const statuses = new Map<number, number>();
      for (const [, status, n] of out.matchAll(/STATUS (\d+) (\d+)/g))
        statuses.set(Number(status), (statuses.get(Number(status)) ?? 0) + Number(n));
      resolve({
        requests: Number(totals[1]),
        seconds: Number(totals[2]),
        statuses,
        p50: Number(latency[1]),
        p90: Number(latency[2]),
        p99: Number(latency[3]),
      });
    });
  });
}

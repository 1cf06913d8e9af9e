// wrk as the benches' load generator: a process of its own (so the client's CPU never queues the
// answers it times), optionally pinned to a core, paced by a Lua `delay()` that hands out send
// slots at a fixed rate (an open loop while connections are free), and a `done()` that prints the
// answers by status and the latency percentiles, parsed here.
import { spawn } from 'node:child_process';

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

/** Starts wrk (under `taskset -c cpu` when given); resolves when it has run `seconds`. */
export function runWrk(options: {
  readonly url: string;
  readonly script: string;
  readonly seconds: number;
  readonly connections: number;
  readonly threads?: number;
  readonly cpu?: string | undefined;
}): Promise<WrkRun> {
  const args = [
    `-t${options.threads ?? 1}`,
    `-c${options.connections}`,
    `-d${options.seconds}s`,
    '-s',
    options.script,
    options.url,
  ];
  const [command, argv] =
    options.cpu === undefined ? ['wrk', args] : ['taskset', ['-c', options.cpu, 'wrk', ...args]];
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

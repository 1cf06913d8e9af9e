// Runs wrk pinned to the load-generator core and reads the JSON line wrk.lua prints at the end.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('./wrk.lua', import.meta.url));

export interface WrkRun {
  readonly url: string;
  readonly durationSeconds: number;
  readonly connections: number;
  /** Core list for taskset. */
  readonly cpus: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** One token a line; each request sends the next one as a bearer token. */
  readonly tokenFile?: string;
  /** With `tokenFile`: its lines are DPoP proofs (each used once), sent beside `headers`. */
  readonly dpop?: boolean;
}

export interface WrkResult {
  readonly requests: number;
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Connect/read/write/timeout errors plus non-2xx/3xx answers. */
  readonly errors: number;
}

/** Extracts the totals line wrk.lua prints; throws if wrk printed none. */
export function parseWrkOutput(stdout: string): WrkResult {
  const line = stdout.split('\n').find((l) => l.startsWith('{"requests"'));
  if (!line) throw new Error(`wrk printed no totals: ${stdout.slice(0, 300)}`);
  const raw = JSON.parse(line) as {
    requests: number;
    duration_us: number;
    socket_errors: number;
    status_errors: number;
    p50_us: number;
    p99_us: number;
  };
  return {
    requests: raw.requests,
    rps: raw.requests / (raw.duration_us / 1e6),
    p50Ms: raw.p50_us / 1000,
    p99Ms: raw.p99_us / 1000,
    errors: raw.socket_errors + raw.status_errors,
  };
}

export function wrkArgs(run: WrkRun): string[] {
  const args = ['-c', run.cpus, 'wrk', '-t1', `-c${run.connections}`, `-d${run.durationSeconds}s`];
  for (const [name, value] of Object.entries(run.headers ?? {}))
    args.push('-H', `${name}: ${value}`);
  args.push('-s', SCRIPT, run.url);
  if (run.tokenFile) args.push('--', run.tokenFile, ...(run.dpop ? ['dpop'] : []));
  return args;
}

export function runWrk(run: WrkRun): Promise<WrkResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('taskset', wrkArgs(run), { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`wrk exited with ${code}: ${stderr.slice(0, 300)}`));
      try {
        resolve(parseWrkOutput(stdout));
      } catch (error) {
        reject(error);
      }
    });
  });
}

// Starts one process of a system under test inside its limits (limits.ts wraps the command), its
// output in a log file, through the benches' launcher (measured-process.ts): ready once its URL
// answers at all, stopped by its own PID, killed if the run exits first.
import type { Command, Confinement } from './limits.js';
import { startMeasuredProcess } from './measured-process.js';

export interface ServiceSpec {
  /** Short name used for the cgroup, the log file and the report (`nginx`, `verifier`, …). */
  readonly name: string;
  readonly command: Command;
  /** Added to this process's environment. */
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /** Under the profile's limits (a gate) or only pinned to the service core (support, e.g. an IdP). */
  readonly limited: boolean;
  /** URL answering any HTTP status once the service is ready. */
  readonly readyUrl: string;
  readonly logFile: string;
}

export interface RunningService {
  readonly name: string;
  readonly pid: number;
  readonly limited: boolean;
  stop(): Promise<void>;
}

export async function startService(
  spec: ServiceSpec,
  confinement: Confinement,
): Promise<RunningService> {
  const { command, args } = confinement.wrap(spec.name, spec.command, spec.limited);
  const started = await startMeasuredProcess({
    name: spec.name,
    command,
    args,
    env: { ...process.env, ...spec.env } as Record<string, string>,
    ...(spec.cwd === undefined ? {} : { cwd: spec.cwd }),
    ready: { url: spec.readyUrl, anyStatus: true },
    readyTimeoutMs: 20_000,
    logFile: spec.logFile,
  }).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}; see ${spec.logFile}`);
  });
  return { name: spec.name, pid: started.pid, limited: spec.limited, stop: () => started.stop() };
}

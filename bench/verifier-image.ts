// The verifier image as a bench runtime: Node 24 with its uWebSockets.js addon exactly as deployed
// (verifier/Dockerfile), which a Debian 12 host cannot load (the addon needs glibc 2.38). Benches
// run the image's own verifier, or a script of theirs with the image's node and addon (mounted
// read-only, the image unchanged), on the host's network and pinned to one core like the host's
// processes, and read each container's CPU from its cgroup (perf/container-cpu.ts).
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { containerCpu } from '../perf/container-cpu.js';
import { IMAGES, buildImages, docker, missingEngine } from '../test/containers/engine.js';

/** Where the image keeps its production node_modules: a mounted script's NODE_PATH. */
const IMAGE_MODULES = '/app/node_modules';
const MOUNT = '/bench';

export interface ImageProcess {
  /** CPU µs used so far by the container (every process and thread in it). */
  readonly cpu: () => number;
  /** The file that figure comes from. */
  readonly cpuSource: string;
  readonly stop: () => Promise<void>;
}

const running = new Set<string>();
let mounted: string | undefined;

/**
 * Builds the verifier image (cached layers: seconds once built) and says which Node it runs; a
 * reason instead when no container engine answers or the image does not build, for a
 * "not measured (reason)" column.
 */
export async function prepareVerifierImage(): Promise<{ node: string } | { missing: string }> {
  const missing = await missingEngine();
  if (missing !== undefined) return { missing };
  try {
    await buildImages(['verifier']);
    return { node: await docker('run', '--rm', IMAGES.verifier, 'node', '--version') };
  } catch (error) {
    const { stderr, message } = error as { stderr?: string; message: string };
    const lines = (stderr?.trim() || message).split('\n');
    return { missing: `the verifier image did not build: ${lines.at(-1)}` };
  }
}

/**
 * The image's own verifier (its CMD, NODE_OPTIONS and MALLOC_ARENA_MAX) with `env`, on the host's
 * network so it reaches the bench's JWKS on loopback and wrk reaches it on VERIFIER_LISTEN.
 */
export function startImageVerifier(
  cpuset: string,
  env: Readonly<Record<string, string>>,
): Promise<ImageProcess> {
  return startContainer(cpuset, env, []);
}

/**
 * `source` (CommonJS) run by the image's node as a server, with the image's modules (its
 * uWebSockets.js addon) on NODE_PATH; with Node's default flags, as the host's inline servers run.
 */
export function startImageScript(
  cpuset: string,
  source: string,
  env: Readonly<Record<string, string>>,
): Promise<ImageProcess> {
  const file = mountFile('server.cjs', source);
  return startContainer(cpuset, { ...env, NODE_PATH: IMAGE_MODULES, NODE_OPTIONS: '' }, [
    'node',
    file,
  ]);
}

/**
 * `source` (CommonJS) run to its end by the image's node, default flags, `files` mounted beside it
 * (their paths in the container are passed as its arguments, in order); its stdout.
 */
export async function runImageScript(
  cpuset: string,
  source: string,
  files: Readonly<Record<string, string>>,
): Promise<string> {
  const script = mountFile('run.cjs', source);
  const paths = Object.entries(files).map(([name, content]) => mountFile(name, content));
  return docker(
    'run',
    '--rm',
    '--network',
    'none',
    '--cpuset-cpus',
    cpuset,
    '-v',
    `${mountDir()}:${MOUNT}:ro`,
    '-e',
    'NODE_OPTIONS=',
    IMAGES.verifier,
    'node',
    script,
    ...paths,
  );
}

/** Removes every container still running and the mounted files (the bench's `finally`). */
export async function removeImageProcesses(): Promise<void> {
  for (const id of running) await docker('rm', '-f', id).catch(() => undefined);
  running.clear();
  if (mounted) rmSync(mounted, { recursive: true, force: true });
  mounted = undefined;
}

async function startContainer(
  cpuset: string,
  env: Readonly<Record<string, string>>,
  command: readonly string[],
): Promise<ImageProcess> {
  const id = await docker(
    'run',
    '-d',
    '--network',
    'host',
    '--cpuset-cpus',
    cpuset,
    ...(command.length > 0 ? ['-v', `${mountDir()}:${MOUNT}:ro`] : []),
    ...Object.entries(env).flatMap(([name, value]) => ['-e', `${name}=${value}`]),
    IMAGES.verifier,
    ...command,
  );
  running.add(id);
  const pid = Number(await docker('inspect', '--format', '{{.State.Pid}}', id));
  if (!(pid > 0)) throw new Error(`container ${id.slice(0, 12)} is not running`);
  const cpu = containerCpu(pid);
  return {
    cpu: cpu.read,
    cpuSource: cpu.source,
    // A bench server has no shutdown to wait for: the container and its figures go at once.
    stop: async () => {
      running.delete(id);
      await docker('rm', '-f', id);
    },
  };
}

/** A directory the image's unprivileged `node` user can read (mkdtemp makes it 0700). */
function mountDir(): string {
  if (!mounted) {
    mounted = mkdtempSync(join(tmpdir(), 'bench-image-'));
    chmodSync(mounted, 0o755);
  }
  return mounted;
}

function mountFile(name: string, content: string): string {
  writeFileSync(join(mountDir(), name), content, { mode: 0o644 });
  return `${MOUNT}/${name}`;
}

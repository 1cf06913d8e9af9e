// `npm run stress -- --engine docker`: each system as a fresh compose project of
// docker-compose-stress.yaml (the system's profile), its gate containers limited by Docker like the
// study's, locust in its own container on the host network. The figures come from where the
// process runner takes them: /proc for the CPU and RSS of the containers' processes, each
// container's cgroup for CFS throttling and peak memory, the gate's access log (NGINX's stdout).
import { execFile, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { freePort } from '../stack/ports.js';
import { parseCpuStat, type Confinement, type ResourceProfile } from './limits.js';
import type { SystemName } from './stress-options.js';
import type { ServiceInfo, SystemInstance } from './systems.js';

const run = promisify(execFile);
const REPO_ROOT = join(import.meta.dirname, '..');
const COMPOSE_FILE = join(REPO_ROOT, 'docker-compose-stress.yaml');

/**
 * Compose services of each system: the one the load is sent to, the gate containers under the
 * limits, and the support ones.
 */
const SYSTEM_SERVICES: Readonly<
  Record<SystemName, { front: string; limited: readonly string[]; support: readonly string[] }>
> = {
  ours: { front: 'nginx', limited: ['nginx', 'verifier'], support: ['idp'] },
  'study-njs': { front: 'study-njs', limited: ['study-njs'], support: ['userinfo', 'idp'] },
  'study-node': { front: 'study-node', limited: ['study-node'], support: ['userinfo', 'idp'] },
  'njs-verify': { front: 'njs-verify', limited: ['njs-verify'], support: ['idp'] },
};

function readCgroup(controller: string, id: string, file: string): string | undefined {
  try {
    return readFileSync(`/sys/fs/cgroup/${controller}/docker/${id}/${file}`, 'utf8');
  } catch {
    return undefined;
  }
}

async function compose(project: string, env: Record<string, string>, ...args: string[]) {
  const { stdout } = await run('docker', ['compose', '-f', COMPOSE_FILE, '-p', project, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    timeout: 600_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout.trim();
}

async function waitForAnswer(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await fetch(url, { signal: AbortSignal.timeout(2_000) });
      return;
    } catch (error) {
      if (Date.now() > deadline)
        throw new Error(`${url} never answered: ${(error as Error).message}`, { cause: error });
      await sleep(250);
    }
  }
}

export interface DockerEngine {
  /** Docker's limits seen through the Confinement the report reads (throttling, peak memory). */
  readonly confinement: Confinement;
  /** Builds the images once: the systems' and locust's. */
  build(systems: readonly SystemName[]): Promise<void>;
  startSystem(name: SystemName, ctx: { dir: string }): Promise<SystemInstance>;
}

export function createDockerEngine(profile: ResourceProfile, cpus: string): DockerEngine {
  const runId = `${process.pid}-${Date.now().toString(36)}`;
  /** Container id by service, for the system being measured. */
  const containers = new Map<string, string>();
  const env = { STRESS_CPUS: String(profile.cpu), STRESS_MEMORY: `${profile.memoryMb}m` };

  const confinement: Confinement = {
    support: { mode: 'cgroup' },
    profile,
    cpus,
    wrap: (_service, command) => command,
    adopt: () => undefined,
    peakMemoryBytes(service) {
      const id = containers.get(service);
      const text = id && readCgroup('memory', id, 'memory.max_usage_in_bytes');
      return text ? Number(text) : undefined;
    },
    cpuThrottling(service) {
      const id = containers.get(service);
      const text = id && readCgroup('cpu', id, 'cpu.stat');
      return text ? parseCpuStat(text) : undefined;
    },
    release: () => Promise.resolve(),
  };

  return {
    confinement,
    async build(systems) {
      const profiles = systems.flatMap((name) => ['--profile', name]);
      await compose(
        `sg-stress-${runId}`,
        env,
        ...profiles,
        '--profile',
        'load',
        'build',
        '--quiet',
      );
    },
    async startSystem(name, ctx) {
      const project = `sg-stress-${runId}-${name}`;
      const ports = {
        STRESS_GATE_PORT: String(await freePort()),
        STRESS_IDP_PORT: String(await freePort()),
      };
      const projectEnv = { ...env, ...ports };
      const { front, limited, support } = SYSTEM_SERVICES[name];
      // NGINX logs to its stdout in the image: `docker logs` is the access log so far.
      const saveLogs = (service: string) => {
        const id = containers.get(service);
        if (id === undefined) return;
        const logs = spawnSync('docker', ['logs', id], { maxBuffer: 512 * 1024 * 1024 });
        writeFileSync(join(ctx.dir, `${service}.stdout.log`), logs.stdout ?? '');
        writeFileSync(join(ctx.dir, `${service}.stderr.log`), logs.stderr ?? '');
      };
      let stopped: Promise<void> | undefined;
      const stop = () =>
        (stopped ??= (async () => {
          // Stopping flushes NGINX's buffered access log into its stdout.
          await compose(project, projectEnv, '--profile', name, 'stop', '-t', '5').catch(() => '');
          for (const service of containers.keys()) saveLogs(service);
          await compose(project, projectEnv, '--profile', name, 'down', '-v', '-t', '5').catch(
            (error: unknown) =>
              process.stderr.write(`[${name}] compose down: ${(error as Error).message}\n`),
          );
          containers.clear();
        })());
      try {
        containers.clear();
        await compose(project, projectEnv, '--profile', name, 'up', '-d', '--wait');
        const services: ServiceInfo[] = [];
        for (const service of [...limited, ...support]) {
          const id = await compose(project, projectEnv, '--profile', name, 'ps', '-q', service);
          const pid = Number(
            (await run('docker', ['inspect', '--format', '{{.State.Pid}}', id])).stdout.trim(),
          );
          if (!id || !(pid > 0)) throw new Error(`no running "${service}" container`);
          containers.set(service, id);
          services.push({ name: service, pids: [pid], limited: limited.includes(service) });
        }
        // The gate's own address on the stress network, not its published port: a connection to
        // 127.0.0.1:port goes through docker-proxy, a userland copy outside every cgroup that cost
        // as much CPU per request as NGINX. Traffic from other hosts never takes it (iptables
        // DNAT), and the host reaches the bridge network directly.
        const gateIp = (
          await run('docker', [
            'inspect',
            '--format',
            '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}',
            containers.get(front) ?? front,
          ])
        ).stdout.trim();
        if (!gateIp) throw new Error(`no address for the "${front}" container`);
        const baseUrl = `http://${gateIp}:8080`;
        await waitForAnswer(`${baseUrl}/`, 60_000);
        return {
          name,
          baseUrl,
          issuer: `http://127.0.0.1:${ports.STRESS_IDP_PORT}`,
          services,
          accessLog: name === 'ours' ? join(ctx.dir, 'nginx.stdout.log') : undefined,
          syncAccessLog: () => saveLogs('nginx'),
          stop,
        };
      } catch (error) {
        await stop();
        throw error;
      }
    },
  };
}

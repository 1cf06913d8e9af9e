// The systems a stress run compares, each started fresh with the same shape: a base URL, an
// issuer to mint tokens from, and its services (root PIDs) under the run's limits.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startStack } from '../stack/start-stack.js';
import { freePort } from '../stack/ports.js';
import { startBaseline, type BaselineName } from './baselines.js';
import type { Confinement } from './limits.js';
import type { SystemName } from './stress-options.js';
import { startService } from './service.js';
import { fetchRs256Spki } from './tokens.js';

export const AUDIENCE = 'secret-gate-api';
const REPO_ROOT = join(import.meta.dirname, '..');

/**
 * All stress and bench traffic comes from 127.0.0.1, so NGINX's per-IP limit on /secret would
 * turn most of it into 429s; these values lift it for load runs only.
 */
export const LOAD_TEST_NGINX_ENV: Readonly<Record<string, string>> = Object.freeze({
  SG_SECRET_RATE: '1000000r/s',
  SG_SECRET_BURST: '1000000',
  // The image's buffered access log: measure what is deployed.
  SG_ACCESS_LOG_OPTIONS: 'buffer=64k flush=1s',
});

export interface ServiceInfo {
  readonly name: string;
  readonly pids: readonly number[];
  /** Under the profile's limits (a gate on the request path) or only pinned (support). */
  readonly limited: boolean;
}

export interface SystemInstance {
  readonly name: SystemName;
  readonly baseUrl: string;
  readonly issuer: string;
  readonly services: readonly ServiceInfo[];
  /** The gate's JSON access log with `request_time`, complete once `stop` resolved (ours only). */
  readonly accessLog?: string;
  /** Brings `accessLog` up to date while the system runs, where it is not a live file (containers). */
  syncAccessLog?(): void;
  stop(): Promise<void>;
}

export interface SystemContext {
  readonly dir: string;
  readonly confinement: Confinement;
  /** Extra SG_ values for our NGINX (e.g. worker count for the benchmark). */
  readonly nginxEnv?: Readonly<Record<string, string>>;
  /** Extra VERIFIER_ values for our verifier (e.g. a cache size for the benchmark). */
  readonly verifierEnv?: Readonly<Record<string, string>>;
}

/** Direct children of this process whose command line contains `marker`. */
export function childPidsMatching(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== process.pid) continue;
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (cmdline.includes(marker)) pids.push(Number(entry));
    } catch {
      // The process exited while we looked.
    }
  }
  return pids;
}

/** The all-distinct rows send every token's first call from that one address to the verifier too. */
export const LOAD_TEST_VERIFIER_ENV: Readonly<Record<string, string>> = Object.freeze({
  VERIFIER_VERIFY_RATE: '1000000r/s',
  VERIFIER_VERIFY_BURST: '1000000',
});

export interface BenchedVerifier {
  readonly issuer: string;
  readonly audience: string;
  readonly jwksUri: string;
  readonly port: number;
  /** `warn` unless set. */
  readonly logLevel?: string;
}

/**
 * A benched verifier's variables: one issuer, `secrets:read` required, listening on loopback
 * `port`, and LOAD_TEST_VERIFIER_ENV (wrk sends no X-SG-Client: every call would share the direct
 * callers' one bucket).
 */
export function benchedVerifierEnv(verifier: BenchedVerifier): Record<string, string> {
  return {
    VERIFIER_ISSUER: verifier.issuer,
    VERIFIER_AUDIENCE: verifier.audience,
    VERIFIER_JWKS_URI: verifier.jwksUri,
    VERIFIER_REQUIRED_SCOPES: 'secrets:read',
    VERIFIER_LISTEN: `127.0.0.1:${verifier.port}`,
    VERIFIER_LOG_LEVEL: verifier.logLevel ?? 'warn',
    ...LOAD_TEST_VERIFIER_ENV,
  };
}

/** Ours: the real stack from stack/ (dev IdP, verifier, NGINX), then moved into the limits. */
async function startOurs(ctx: SystemContext): Promise<SystemInstance> {
  const before = new Set(childPidsMatching(''));
  const stack = await startStack({
    runtimeDir: join(ctx.dir, 'stack'),
    env: {
      nginx: { ...LOAD_TEST_NGINX_ENV, ...ctx.nginxEnv },
      verifier: { ...LOAD_TEST_VERIFIER_ENV, ...ctx.verifierEnv },
    },
  });
  const fresh = (marker: string) => childPidsMatching(marker).filter((pid) => !before.has(pid));
  const services: ServiceInfo[] = [
    { name: 'nginx', pids: fresh('nginx: master'), limited: true },
    { name: 'verifier', pids: fresh('verifier/dist/main.js'), limited: true },
    { name: 'idp', pids: fresh('idp/main.ts'), limited: false },
  ];
  try {
    for (const service of services) {
      if (service.pids.length !== 1) {
        throw new Error(`found ${service.pids.length} "${service.name}" processes of the stack`);
      }
      // The NGINX workers are children of the master; move them too.
      const all =
        service.name === 'nginx'
          ? [...service.pids, ...childrenOf(service.pids[0]!)]
          : service.pids;
      ctx.confinement.adopt(service.name, all, service.limited);
    }
  } catch (error) {
    await stack.stop();
    throw error;
  }
  return {
    name: 'ours',
    baseUrl: stack.urls.gate,
    issuer: stack.urls.issuer,
    services,
    accessLog: join(stack.files.nginxPrefix, 'logs', 'access.log'),
    stop: () => stack.stop(),
  };
}

/** Direct children of `pid` (an NGINX master's workers). */
export function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid)
        children.push(Number(entry));
    } catch {
      // Exited meanwhile.
    }
  }
  return children;
}

/** A baseline plus the dev IdP its tokens (and njs-verify's key) come from, pinned as support. */
async function startWithIdp(name: BaselineName, ctx: SystemContext): Promise<SystemInstance> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const idp = await startService(
    {
      name: 'idp',
      command: {
        command: process.execPath,
        args: ['--import', 'tsx', join(REPO_ROOT, 'idp/main.ts')],
      },
      cwd: REPO_ROOT,
      env: {
        IDP_PORT: String(port),
        IDP_ISSUER: issuer,
        IDP_AUDIENCE: AUDIENCE,
        IDP_DEV_CONTROL: 'off',
      },
      limited: false,
      readyUrl: `${issuer}/readyz`,
      logFile: join(ctx.dir, 'idp.log'),
    },
    ctx.confinement,
  );
  try {
    const gate = await startBaseline(name, {
      dir: ctx.dir,
      confinement: ctx.confinement,
      issuer,
      audience: AUDIENCE,
      spki: await fetchRs256Spki(issuer),
    });
    return {
      name,
      baseUrl: gate.baseUrl,
      issuer,
      services: [
        ...gate.services.map((s) => ({ name: s.name, pids: [s.pid], limited: s.limited })),
        { name: 'idp', pids: [idp.pid], limited: false },
      ],
      async stop() {
        await gate.stop();
        await idp.stop();
      },
    };
  } catch (error) {
    await idp.stop();
    throw error;
  }
}

/** Starts one system with fresh processes under `ctx.confinement`. */
export function startSystem(name: SystemName, ctx: SystemContext): Promise<SystemInstance> {
  return name === 'ours' ? startOurs(ctx) : startWithIdp(name, ctx);
}

// The production-shaped local run (`npm start -- --production`, test/deploy/production.test.ts):
// the same processes as startStack(), arranged the way the Kubernetes pod runs them, so the
// production configuration is proven on a laptop before anyone ships it:
//   - NGINX and the verifier run as one unprivileged user (`nobody` when started as root, else the
//     caller), with no_new_privs — like the pod's shared runAsUser and allowPrivilegeEscalation off;
//   - the verifier listens on a unix socket only, and NGINX reaches it there;
//   - configuration directories are read-only (root-owned, or at least not writable), while run,
//     temp and log directories are the only writable places, like the pod's emptyDirs;
//   - the dev IdP runs without its control API (IDP_DEV_CONTROL=off), as a real IdP would.
// It uses the runner's parts (stack/*) rather than startStack() itself, because startStack()
// always gives the verifier a TCP port and checks its readiness there.
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createIdpClient } from './idp-client.js';
import { nginxPaths } from './nginx/render.js';
import { prepareNginx } from './nginx-runtime.js';
import { freePort } from './ports.js';
import { artefacts, ensureArtefacts, findNginx } from './prerequisites.js';
import { assertWorkersCanReach } from './worker-access.js';
import { createServiceProcess, waitForHttp, type ServiceProcess } from './service-process.js';
import {
  VERIFIER_NODE_FLAGS,
  idpEnv,
  verifierConfig,
  verifierEnv,
  type ServiceName,
} from './service-env.js';
import { REPO_ROOT, type Stack, type StackOptions } from './start-stack.js';
import { inheritedEnv, stackUrls, superviseStack } from './supervise.js';

/** Who NGINX and the verifier run as. */
export interface RunAs {
  readonly user: string;
  readonly uid: number;
  readonly gid: number;
  /** True when the runner switches to this user (it runs as root); false: it is the caller. */
  readonly switched: boolean;
}

export interface ProductionStack extends Stack {
  readonly runAs: RunAs;
  /** The verifier's only listener, `unix:` stripped. */
  readonly verifierSocket: string;
  /** Directories nothing in the stack may write to. */
  readonly readOnlyDirs: readonly string[];
}

const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path));

/** `nobody` from /etc/passwd when we are root, else the current user (already unprivileged). */
export function chooseRunAs(passwd = '/etc/passwd'): RunAs {
  const uid = process.getuid?.() ?? 0;
  const gid = process.getgid?.() ?? 0;
  if (uid !== 0) return { user: `uid ${uid}`, uid, gid, switched: false };
  const entry = readFileSync(passwd, 'utf8')
    .split('\n')
    .map((line) => line.split(':'))
    .find((fields) => fields[0] === 'nobody');
  if (!entry || !SETPRIV) {
    throw new Error(
      'running as root needs a "nobody" user and setpriv (util-linux) to drop privileges',
    );
  }
  return { user: 'nobody', uid: Number(entry[2]), gid: Number(entry[3]), switched: true };
}

/** The command line that runs `command` as `runAs`, with no way to regain privileges. */
export function asUser(runAs: RunAs, command: string, args: readonly string[]): [string, string[]] {
  if (!runAs.switched) return [command, [...args]];
  const drop = [
    '--reuid',
    String(runAs.uid),
    '--regid',
    String(runAs.gid),
    '--clear-groups',
    '--no-new-privs',
  ];
  return [SETPRIV as string, [...drop, '--', command, ...args]];
}

/** Polls `GET path` over a unix socket until it answers 200, like a kubelet exec probe would. */
function waitForUnixHttp(socketPath: string, path: string, signal: AbortSignal): Promise<void> {
  const once = () =>
    new Promise<boolean>((done) => {
      const req = request({ socketPath, path, timeout: 2_000 }, (res) => {
        res.resume();
        done(res.statusCode === 200);
      });
      req.on('error', () => done(false));
      req.on('timeout', () => req.destroy());
      req.end();
    });
  return (async () => {
    while (!signal.aborted) {
      if (await once()) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no 200 from ${path} on unix:${socketPath}`);
  })();
}

/** Every directory below `dir` (inclusive) that holds rendered configuration, not runtime state. */
function configDirs(dir: string, writable: ReadonlySet<string>): string[] {
  const dirs = [dir];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory() && !writable.has(path)) dirs.push(...configDirs(path, writable));
  }
  return dirs;
}

/** Files 0444 and directories 0555: readable by the services, writable by none of them. */
function setReadOnly(dirs: readonly string[], readOnly: boolean): void {
  for (const dir of dirs) {
    chmodSync(dir, readOnly ? 0o555 : 0o755);
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isFile()) {
        const path = join(dir, entry.name);
        // Group/other bits stay as they were (0 for the secrets file), only write goes.
        const mode = statSync(path).mode & 0o777;
        chmodSync(path, readOnly ? mode & 0o555 : mode | 0o200);
      }
    }
  }
}

/** Starts IdP, verifier and NGINX the production way; on any failure stops what started. */
export async function startProductionStack(options: StackOptions = {}): Promise<ProductionStack> {
  const log = options.log ?? (() => {});
  const runAs = chooseRunAs();
  const nginxBinary = await findNginx();
  await ensureArtefacts(REPO_ROOT, { build: options.build ?? true, log });
  assertWorkersCanReach(artefacts(REPO_ROOT).map((artefact) => artefact.marker));

  const ownsDir = options.runtimeDir === undefined;
  const runtimeDir = options.runtimeDir
    ? resolve(options.runtimeDir)
    : mkdtempSync(join(tmpdir(), 'secret-gate-production-'));
  mkdirSync(runtimeDir, { recursive: true });
  chmodSync(runtimeDir, 0o755);
  const logDir = join(runtimeDir, 'logs');
  const configDir = join(runtimeDir, 'config');
  const socketDir = join(runtimeDir, 'socket');
  for (const dir of [logDir, configDir, socketDir]) mkdirSync(dir, { recursive: true });
  // The socket directory is the pod's shared emptyDir: only the services' user may enter it.
  chownSync(socketDir, runAs.uid, runAs.gid);
  chmodSync(socketDir, 0o700);
  const socket = join(socketDir, 'verifier.sock');

  const ports = {
    nginx: options.ports?.nginx || (await freePort()),
    idp: options.ports?.idp || (await freePort()),
    verifier: 0, // no TCP port: unix socket only
  };
  const audience = options.audience ?? 'secret-gate-api';
  const issuer = `http://127.0.0.1:${ports.idp}`;

  // Secrets readable by the services' group only, like the pod's 0440 Secret volume + fsGroup.
  const secretsFile = join(configDir, 'secrets.json');
  writeFileSync(secretsFile, readFileSync(options.secretsFile ?? nginxPaths.devSecretsFile), {
    mode: 0o440,
  });
  chownSync(secretsFile, process.getuid?.() ?? 0, runAs.gid);
  const verifierConfigFile = join(configDir, 'verifier.json');
  writeFileSync(
    verifierConfigFile,
    `${JSON.stringify(verifierConfig({ issuer, jwksUri: `${issuer}/jwks`, audience }), null, 2)}\n`,
    {
      mode: 0o444,
    },
  );

  const env: Record<ServiceName, Record<string, string>> = {
    idp: {
      ...idpEnv({ host: '127.0.0.1', port: ports.idp, issuer, audience }),
      IDP_DEV_CONTROL: 'off',
      ...options.env?.idp,
    },
    verifier: {
      ...verifierEnv({ listen: `unix:${socket}`, configFile: verifierConfigFile }),
      ...options.env?.verifier,
    },
    nginx: {},
  };
  const prefix = join(runtimeDir, 'nginx');
  const nginx = await prepareNginx({
    prefix,
    nginx: nginxBinary,
    listen: `127.0.0.1:${ports.nginx}`,
    verifierAddr: `unix:${socket}`,
    issuer,
    audience,
    secretsFile,
    // No `user` directive: the master itself is unprivileged, as in the pod.
    overrides: { SG_USER_DIRECTIVE: '', ...options.env?.nginx },
  });
  env.nginx = { ...nginx.env };
  if (options.secrets !== undefined) env.nginx.SECRETS = options.secrets;

  // Run, temp and log directories belong to the services' user; everything else is read-only.
  const writable = new Set([nginx.env.SG_RUN_DIR, nginx.env.SG_TEMP_DIR, nginx.env.SG_LOG_DIR]);
  for (const dir of writable) chownSync(dir, runAs.uid, runAs.gid);
  const readOnlyDirs = [configDir, ...configDirs(prefix, writable)];
  setReadOnly(readOnlyDirs, true);

  const gate = `http://127.0.0.1:${ports.nginx}`;
  const logs = {
    idp: join(logDir, 'idp.log'),
    verifier: join(logDir, 'verifier.log'),
    nginx: join(logDir, 'nginx.log'),
  };
  const baseEnv = inheritedEnv();
  const spawnAs = (
    name: ServiceName,
    command: string,
    args: readonly string[],
    ready: (s: AbortSignal) => Promise<void>,
    cwd: string,
  ) => {
    const [cmd, argv] = name === 'idp' ? [command, [...args]] : asUser(runAs, command, args);
    return createServiceProcess({
      name,
      command: cmd,
      args: argv,
      env: { ...baseEnv, ...env[name] },
      cwd,
      logFile: logs[name],
      ready,
    });
  };
  const services: Record<ServiceName, ServiceProcess> = {
    // The dev IdP stands in for the organisation's IdP: it is not part of what gets deployed.
    idp: spawnAs(
      'idp',
      process.execPath,
      ['--import', 'tsx', join(REPO_ROOT, 'idp/main.ts')],
      (s) => waitForHttp(`${issuer}/readyz`, s),
      REPO_ROOT,
    ),
    verifier: spawnAs(
      'verifier',
      process.execPath,
      [...VERIFIER_NODE_FLAGS, join(REPO_ROOT, 'verifier/dist/main.js')],
      (s) => waitForUnixHttp(socket, '/readyz', s),
      REPO_ROOT,
    ),
    nginx: spawnAs(
      'nginx',
      nginxBinary.binary,
      nginx.args,
      (s) => waitForHttp(`${gate}/hello`, s),
      nginx.prefix,
    ),
  };

  const stack = await superviseStack({
    urls: stackUrls(gate, issuer, `unix:${socket}`),
    ports,
    env,
    runtimeDir,
    files: {
      nginxConf: nginx.confFile,
      nginxPrefix: nginx.prefix,
      secrets: secretsFile,
      verifierConfig: verifierConfigFile,
      logs,
    },
    idp: createIdpClient(issuer),
    services,
    readyTimeoutMs: options.readyTimeoutMs,
    log,
    label: (name) => (name === 'idp' ? '' : ` as ${runAs.user}`),
    cleanUp: () => {
      if (!ownsDir) return;
      setReadOnly(readOnlyDirs, false);
      rmSync(runtimeDir, { recursive: true, force: true });
    },
  });
  return { ...stack, runAs, verifierSocket: socket, readOnlyDirs };
}

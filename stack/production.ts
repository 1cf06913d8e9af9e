// The production-shaped local run (`npm start -- --production`, test/deploy/production.test.ts):
// the same processes as startStack(), arranged the way the Kubernetes pod runs them, so the
// production configuration is proven on a laptop before anyone ships it:
//   - NGINX and the verifier run as one unprivileged user (`nobody` when started as root, else the
//     caller), with no_new_privs — like the pod's shared runAsUser and allowPrivilegeEscalation off;
//   - the verifier listens on a unix socket only, and NGINX reaches it there;
//   - configuration directories are read-only (root-owned, or at least not writable), while run,
//     temp and log directories are the only writable places, like the pod's emptyDirs;
//   - the dev IdP runs without its control API (IDP_DEV_CONTROL=off), as a real IdP would.
// It is the production shape of the one orchestrator (orchestrate.ts); startStack() is the dev one.
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { orchestrate, type StackShape } from './orchestrate.js';
import type { Stack, StackOptions } from './start-stack.js';

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
  const runAs = chooseRunAs();
  let socket = '';
  let readOnlyDirs: string[] = [];
  const shape: StackShape = {
    tempPrefix: 'secret-gate-production-',
    layout(runtimeDir) {
      chmodSync(runtimeDir, 0o755);
      const logDir = join(runtimeDir, 'logs');
      const configDir = join(runtimeDir, 'config');
      const socketDir = join(runtimeDir, 'socket');
      for (const dir of [logDir, configDir, socketDir]) mkdirSync(dir, { recursive: true });
      // The socket directory is the pod's shared emptyDir: only the services' user may enter it.
      chownSync(socketDir, runAs.uid, runAs.gid);
      chmodSync(socketDir, 0o700);
      socket = join(socketDir, 'verifier.sock');
      return { runtimeDir, logDir, configDir };
    },
    verifierPort: () => Promise.resolve(0), // no TCP port: unix socket only
    listener: () => ({
      address: `unix:${socket}`,
      url: `unix:${socket}`,
      ready: (signal) => waitForUnixHttp(socket, '/readyz', signal),
    }),
    writeFile(path, content, kind) {
      if (kind === 'config') return writeFileSync(path, content, { mode: 0o444 });
      // Secrets readable by the services' group only, like the pod's 0440 Secret volume + fsGroup.
      writeFileSync(path, content, { mode: 0o440 });
      chownSync(path, process.getuid?.() ?? 0, runAs.gid);
    },
    idpEnv: { IDP_DEV_CONTROL: 'off' },
    // No `user` directive: the master itself is unprivileged, as in the pod.
    nginxOverrides: { SG_USER_DIRECTIVE: '' },
    secure(nginx, layout) {
      // Run, temp and log directories belong to the services' user; everything else is read-only.
      const writable = new Set([nginx.env.SG_RUN_DIR, nginx.env.SG_TEMP_DIR, nginx.env.SG_LOG_DIR]);
      for (const dir of writable) chownSync(dir, runAs.uid, runAs.gid);
      readOnlyDirs = [layout.configDir, ...configDirs(nginx.prefix, writable)];
      setReadOnly(readOnlyDirs, true);
    },
    command: (_name, command, args) => asUser(runAs, command, args),
    label: (name) => (name === 'idp' ? '' : ` as ${runAs.user}`),
    release: () => setReadOnly(readOnlyDirs, false),
  };
  const stack = await orchestrate(options, shape);
  return { ...stack, runAs, verifierSocket: socket, readOnlyDirs };
}

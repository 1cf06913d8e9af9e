// The production-shaped local run (`npm start -- --production`, test/deploy/production.test.ts):
// the same processes as startStack(), arranged the way the Kubernetes pod runs them, so the
// production configuration is proven on a laptop before anyone ships it:
//   - NGINX and the verifier run as two unprivileged users with no_new_privs, like the pod's two
//     runAsUsers and allowPrivilegeEscalation off. NGINX is `nobody`; the verifier has a uid of
//     its own, so a bug in it cannot read the secrets file, the per-set files or NGINX's edge
//     cache. They share one group, the socket's (the pod's fsGroup); NGINX holds it as a
//     supplementary group. Started as another user than root, both run as the caller;
//   - the verifier listens on a unix socket only, in a directory of that group (0770), and NGINX
//     reaches it there;
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
import type { Stack, StackOptions } from './stack.js';

/** Who a service runs as. */
export interface RunAs {
  readonly user: string;
  readonly uid: number;
  readonly gid: number;
  /** Supplementary groups (NGINX: the socket's group). */
  readonly groups: readonly number[];
  /** True when the runner switches to this user (it runs as root); false: it is the caller. */
  readonly switched: boolean;
}

/** NGINX's and the verifier's users, and the one group they share (the socket's). */
export interface ServiceUsers {
  readonly nginx: RunAs;
  readonly verifier: RunAs;
  readonly socketGroup: number;
}

export interface ProductionStack extends Stack {
  /** NGINX's user. */
  readonly runAs: RunAs;
  /** The verifier's user: another uid than NGINX's whenever the runner can switch users. */
  readonly verifierRunAs: RunAs;
  readonly socketGroup: number;
  /** The verifier's only listener, `unix:` stripped. */
  readonly verifierSocket: string;
  /** Directories nothing in the stack may write to. */
  readonly readOnlyDirs: readonly string[];
}

const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path));

/** Ids named in an /etc/passwd or /etc/group file (third field). */
function idsIn(file: string): Set<number> {
  return new Set(
    readFileSync(file, 'utf8')
      .split('\n')
      .map((line) => Number(line.split(':')[2]))
      .filter((id) => Number.isInteger(id)),
  );
}

/** The highest id below `nobody`'s that no account or group uses: nobody else's files are its. */
function unusedId(taken: ReadonlySet<number>, below: number): number {
  for (let id = below - 1; id >= 1000; id--) if (!taken.has(id)) return id;
  throw new Error('no unused id for the verifier between 1000 and 65533');
}

/**
 * As root: NGINX as `nobody`, the verifier as an id no account uses, both in a group of their
 * own for the socket. Otherwise both are the caller (already unprivileged), who cannot split them.
 */
export function chooseServiceUsers(passwd = '/etc/passwd', group = '/etc/group'): ServiceUsers {
  const uid = process.getuid?.() ?? 0;
  const gid = process.getgid?.() ?? 0;
  if (uid !== 0) {
    const caller = { user: `uid ${uid}`, uid, gid, groups: [], switched: false };
    return { nginx: caller, verifier: caller, socketGroup: gid };
  }
  const entry = readFileSync(passwd, 'utf8')
    .split('\n')
    .map((line) => line.split(':'))
    .find((fields) => fields[0] === 'nobody');
  if (!entry || !SETPRIV) {
    throw new Error(
      'running as root needs a "nobody" user and setpriv (util-linux) to drop privileges',
    );
  }
  const nobody = { uid: Number(entry[2]), gid: Number(entry[3]) };
  const verifierUid = unusedId(idsIn(passwd), nobody.uid);
  const socketGroup = unusedId(idsIn(group), nobody.gid);
  return {
    nginx: { user: 'nobody', ...nobody, groups: [socketGroup], switched: true },
    verifier: {
      user: `uid ${verifierUid}`,
      uid: verifierUid,
      gid: socketGroup,
      groups: [],
      switched: true,
    },
    socketGroup,
  };
}

/** The command line that runs `command` as `runAs`, with no way to regain privileges. */
export function asUser(runAs: RunAs, command: string, args: readonly string[]): [string, string[]] {
  if (!runAs.switched) return [command, [...args]];
  const drop = [
    '--reuid',
    String(runAs.uid),
    '--regid',
    String(runAs.gid),
    ...(runAs.groups.length === 0 ? ['--clear-groups'] : ['--groups', runAs.groups.join(',')]),
    '--no-new-privs',
  ];
  return [SETPRIV as string, [...drop, '--', command, ...args]];
}

/** Polls `GET path` over a unix socket until it answers 200, like a kubelet exec probe would. */
export function waitForUnixHttp(
  socketPath: string,
  path: string,
  signal: AbortSignal,
): Promise<void> {
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
  const users = chooseServiceUsers();
  const runAs = users.nginx;
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
      // The socket directory is the pod's shared emptyDir: the verifier's, entered by the socket's
      // group only (NGINX holds it); the verifier makes the socket 0660.
      chownSync(socketDir, users.verifier.uid, users.socketGroup);
      chmodSync(socketDir, 0o770);
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
      // Secrets readable by NGINX's group only, like the pod's 0440 Secret volume mounted in the
      // NGINX container alone: the verifier's user is neither its owner nor in that group.
      writeFileSync(path, content, { mode: 0o440 });
      chownSync(path, process.getuid?.() ?? 0, runAs.gid);
    },
    idpEnv: { IDP_DEV_CONTROL: 'off' },
    // No `user` directive in the templates: the master itself is unprivileged, as in the pod.
    nginxOverrides: {},
    secure(nginx, layout) {
      // Run, temp and log directories belong to the services' user; everything else is read-only.
      const writable = new Set(['run', 'temp', 'logs'].map((dir) => join(nginx.prefix, dir)));
      for (const dir of writable) chownSync(dir, runAs.uid, runAs.gid);
      readOnlyDirs = [layout.configDir, ...configDirs(nginx.prefix, writable)];
      setReadOnly(readOnlyDirs, true);
    },
    command: (name, command, args) =>
      asUser(name === 'verifier' ? users.verifier : runAs, command, args),
    label: (name) =>
      name === 'idp' ? '' : ` as ${(name === 'verifier' ? users.verifier : runAs).user}`,
    release: () => setReadOnly(readOnlyDirs, false),
  };
  const stack = await orchestrate(options, shape);
  return {
    ...stack,
    runAs,
    verifierRunAs: users.verifier,
    socketGroup: users.socketGroup,
    verifierSocket: socket,
    readOnlyDirs,
  };
}

// startStack(): the dev run behind `npm start`, the integration and browser suites and the stress
// and chaos harnesses: the dev IdP, the verifier and NGINX as child processes on loopback, in the
// dev shape of the one orchestrator (orchestrate.ts); production.ts is the other shape.
import { chmodSync, chownSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { orchestrate, type StackShape } from './orchestrate.js';
import { freePort } from './ports.js';
import { waitForUnixHttp } from './production.js';
import { waitForHttp } from './service-process.js';
import type { Stack, StackOptions } from './stack.js';
import { letWorkersRead, workerOwner } from './worker-access.js';

export {
  REPO_ROOT,
  type MintOptions,
  type OwnIdp,
  type Stack,
  type StackOptions,
  type StackUrls,
} from './stack.js';

/** Starts the whole stack; on any failure stops what already started and rethrows. */
export function startStack(options: StackOptions = {}): Promise<Stack> {
  return orchestrate(options, devShape(options.verifierSocket ?? false));
}

/**
 * The dev run: everything in one temp directory, the verifier on a loopback TCP port (with an
 * edge key, orchestrate.ts) or, for `npm start`, on a unix socket in the runtime directory.
 */
function devShape(socket: boolean): StackShape {
  let socketPath = '';
  return {
    tempPrefix: 'secret-gate-',
    layout(runtimeDir) {
      const logDir = join(runtimeDir, 'logs');
      mkdirSync(logDir, { recursive: true });
      if (socket) socketPath = socketIn(join(runtimeDir, 'verifier'));
      return { runtimeDir, logDir, configDir: runtimeDir };
    },
    verifierPort: async (requested) => (socket ? 0 : requested || (await freePort())),
    listener: (_layout, port) =>
      socket
        ? {
            address: `unix:${socketPath}`,
            url: `unix:${socketPath}`,
            ready: (signal) => waitForUnixHttp(socketPath, '/readyz', signal),
          }
        : {
            address: `127.0.0.1:${port}`,
            url: `http://127.0.0.1:${port}`,
            ready: (signal) => waitForHttp(`http://127.0.0.1:${port}/readyz`, signal),
          },
    writeFile(path, content, kind) {
      if (kind === 'config') return writeFileSync(path, content);
      if (kind === 'key') return writeFileSync(path, content, { mode: 0o600 });
      writeFileSync(path, content, { mode: 0o600 });
      // NGINX's workers may run as another user (`nobody` under root): they get read access only.
      letWorkersRead(dirname(path), path);
    },
    idpEnv: {},
    nginxOverrides: {},
    secure: () => {},
    command: (_name, command, args) => [command, [...args]],
    release: () => {},
  };
}

/**
 * The socket's directory: the runner's, entered by NGINX's workers only. Under root the workers
 * are `nobody`: the directory belongs to their group and passes it on (setgid) to the socket the
 * verifier makes 0660, so they, and no other user, may connect.
 */
function socketIn(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const workers = workerOwner();
  if (process.getuid?.() === 0) {
    chownSync(dir, 0, workers.gid);
    chmodSync(dir, 0o2750);
  } else chmodSync(dir, 0o700);
  return join(dir, 'verifier.sock');
}

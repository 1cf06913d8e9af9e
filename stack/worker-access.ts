// NGINX started as root runs its workers as `nobody`, and the workers read the secrets file on each
// allowed request. Give that user, and only it, what it needs: a way through the runtime
// directory and ownership of the file (still mode 0600). Without root there is nothing to do.
import { chmodSync, chownSync, readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** uid and gid of `nobody` from /etc/passwd (65534 on Debian). */
function nobody(): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('nobody:'));
  const [, , uid, gid] = line?.split(':') ?? [];
  return { uid: Number(uid ?? 65534), gid: Number(gid ?? 65534) };
}

/** Who NGINX's workers run as: `nobody` when we are root, else ourselves. */
export function workerOwner(): { uid: number; gid: number } {
  if (process.getuid?.() !== 0)
    return { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
  return nobody();
}

/** Lets NGINX's unprivileged workers read `secretsFile` inside `runtimeDir`. */
export function letWorkersRead(runtimeDir: string, secretsFile: string): void {
  if (process.getuid?.() !== 0) return;
  const { uid, gid } = nobody();
  chmodSync(runtimeDir, 0o711);
  chownSync(secretsFile, uid, gid);
}

/**
 * The first directory on the way to `path` that other users cannot enter (no `o+x`), if any. A
 * checkout in a private home (`/root` is 0700) hides the SPA, the njs code and the compiled
 * verifier from the unprivileged workers, which then answer 403 and 503 with no hint why.
 */
export function closedAncestor(
  path: string,
  // A directory that does not exist is not closed: whoever needs the file reports it missing.
  modeOf: (dir: string) => number = (dir) =>
    statSync(dir, { throwIfNoEntry: false })?.mode ?? 0o755,
): string | undefined {
  const dirs: string[] = [];
  for (let dir = resolve(path); ; dir = dirname(dir)) {
    dirs.unshift(dir);
    if (dirname(dir) === dir) break;
  }
  return dirs.find((dir) => (modeOf(dir) & 0o001) === 0);
}

/** Started as root, refuses to go on when `nobody` could not reach `paths`; says what to do. */
export function assertWorkersCanReach(paths: readonly string[]): void {
  if (process.getuid?.() !== 0) return;
  for (const path of paths) {
    const closed = closedAncestor(dirname(path));
    if (closed !== undefined) {
      throw new Error(
        `running as root, NGINX's workers (and the production verifier) run as "nobody", which ` +
          `cannot enter ${closed} to reach ${path}; put the checkout under a directory others ` +
          `can enter (e.g. /srv or /opt) or run as a normal user`,
      );
    }
  }
}

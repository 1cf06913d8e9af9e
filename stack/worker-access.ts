// NGINX started as root runs its workers as `nobody`, and the workers read the secrets file on each
// allowed request. Give that user, and only it, what it needs: a way through the runtime
// directory and ownership of the file (still mode 0600). Without root there is nothing to do.
import { chmodSync, chownSync, readFileSync } from 'node:fs';

/** uid and gid of `nobody` from /etc/passwd (65534 on Debian). */
function nobody(): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('nobody:'));
  const [, , uid, gid] = line?.split(':') ?? [];
  return { uid: Number(uid ?? 65534), gid: Number(gid ?? 65534) };
}

/** Lets NGINX's unprivileged workers read `secretsFile` inside `runtimeDir`. */
export function letWorkersRead(runtimeDir: string, secretsFile: string): void {
  if (process.getuid?.() !== 0) return;
  const { uid, gid } = nobody();
  chmodSync(runtimeDir, 0o711);
  chownSync(secretsFile, uid, gid);
}

// The secret-set watcher beside a local NGINX (nginx/bin/sg-secret-sets): the command line that
// publishes the sets, starts the supervised watcher and then becomes NGINX, and how to find and
// stop the watcher when NGINX is gone.
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { nginxPaths } from './variables.js';

/** The watcher script of this repository. */
export const secretSetsScript = path.join(nginxPaths.templatesDir, '..', 'bin', 'sg-secret-sets');

/**
 * Environment for the watcher of a local run: the memory directory is the run's own, so the
 * watcher removes it once NGINX is gone (even when the runner was killed outright).
 */
export const OWN_MEMORY_DIR_ENV = Object.freeze({ SECRET_GATE_OWN_MEMORY_DIR: '1' });

/** `sg-secret-sets run NGINX ARGS…`: the same pid as NGINX once it runs. */
export function withSecretSets(nginxBinary: string, args: readonly string[]): [string, string[]] {
  return [secretSetsScript, ['run', nginxBinary, ...args]];
}

/** The watcher's pid (it writes it beside the sets in SG_MEMORY_DIR), if it is running. */
export function secretSetsWatcherPid(memoryDir: string): number | undefined {
  let pid: number;
  try {
    const file = path.join(memoryDir, 'sg-secret-sets', '.watcher.pid');
    pid = Number(readFileSync(file, 'utf8').trim());
  } catch {
    return undefined;
  }
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

/**
 * Removes the memory directory once NGINX has stopped: the watcher ends with NGINX (within one
 * poll) and is stopped here at once, and the removal retries while a last write of it lands.
 */
export function removeMemoryDir(memoryDir: string): void {
  const pid = secretSetsWatcherPid(memoryDir);
  if (pid !== undefined) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // already gone
    }
  }
  rmSync(memoryDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
}

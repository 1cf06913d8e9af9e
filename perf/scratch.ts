// Scratch space for one system's processes (rendered configs, pid files, access logs), kept out of
// the results directory; only small logs are copied over, since access logs of a run are huge.
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const MAX_KEPT_LOG_BYTES = 1024 * 1024;

/**
 * A fresh directory; traversable by others because NGINX's workers run unprivileged (`nobody`
 * when started as root) and read files below it.
 */
export function createScratchDir(label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `secret-gate-stress-${label}-`));
  chmodSync(dir, 0o711);
  return dir;
}

/** Copies every `*.log` under `scratch` up to 1 MB into `dest` (flattened), then removes `scratch`. */
export function keepLogsAndRemove(scratch: string, dest: string): void {
  mkdirSync(dest, { recursive: true });
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.log') && statSync(path).size <= MAX_KEPT_LOG_BYTES) {
        copyFileSync(path, join(dest, relative(scratch, path).replaceAll('/', '_')));
      }
    }
  };
  try {
    walk(scratch);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

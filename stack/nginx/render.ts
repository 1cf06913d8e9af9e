// Renders nginx/templates into a prefix directory a local `nginx -p` run uses as is, by running
// nginx/bin/sg-render: the image's entrypoint runs the same script, so the checks on the SG_*
// values and the rendering are one piece of code for both homes.
import { spawnSync } from 'node:child_process';
import { lstatSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { chmod, chown, lstat, mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { workerOwner } from '../worker-access.js';
import { nginxPaths } from './variables.js';

export {
  dockerNginxEnv,
  localNginxEnv,
  nginxDefaults,
  nginxPaths,
  nginxVariables,
} from './variables.js';
export type { LocalNginxOptions, NginxEnv, NginxVariable, NginxVariableName } from './variables.js';

/** The render script of this repository (nginx/bin/sg-render). */
export const renderScript = path.join(nginxPaths.templatesDir, '..', 'bin', 'sg-render');

export interface RenderOptions {
  /** Source tree laid out like /etc/nginx, files ending in `.template`. */
  readonly templatesDir: string;
  /** Destination (the NGINX prefix); created when missing. */
  readonly outDir: string;
  /** Environment; only names starting with `SG_` are used, like the image's filter. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Directory of ngx_http_js_module.so when it is not Debian's (`modules` in the prefix). */
  readonly modulesDir?: string;
}

export interface RenderResult {
  /** `outDir/nginx.conf`, for `nginx -p outDir -c …`. */
  readonly confPath: string;
}

// envsubst replaces both `${NAME}` and `$NAME`; NGINX's own variables are lower-case ($uri).
const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g;

/**
 * Renders every `*.template` below `templatesDir` into `outDir` with nginx/bin/sg-render, which
 * refuses (one TypeError here, naming every problem) a missing SG_ variable, a value that would
 * break the syntax and an unreadable SG_SECRETS_FILE. Then creates the memory directory
 * SG_MEMORY_DIR exclusively (createMemoryDir): a local run's own.
 */
export async function renderNginxConfig(options: RenderOptions): Promise<RenderResult> {
  const templates = await readdir(options.templatesDir, { recursive: true });
  if (!templates.some((file) => String(file).endsWith('.template'))) {
    throw new TypeError(`no *.template files under "${options.templatesDir}"`);
  }
  const outDir = path.resolve(options.outDir);
  const env = Object.fromEntries(
    Object.entries(options.env).filter(
      (entry): entry is [string, string] => entry[0].startsWith('SG_') && entry[1] !== undefined,
    ),
  );
  if (options.modulesDir) {
    await mkdir(outDir, { recursive: true });
    await symlink(options.modulesDir, path.join(outDir, 'modules')).catch(
      (error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
      },
    );
  }
  const run = spawnSync(renderScript, [options.templatesDir, outDir], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    encoding: 'utf8',
  });
  if (run.error) throw run.error;
  if (run.status !== 0) {
    throw new TypeError(run.stderr.trim().replace(/^sg-render: /, '') || `sg-render failed`);
  }
  const memoryDir = env.SG_MEMORY_DIR;
  if (memoryDir) await createMemoryDir(path.resolve(outDir, memoryDir));
  return { confPath: path.join(outDir, 'nginx.conf') };
}

/**
 * The memory directory holds edge-cache files (which begin with the token) and the secret sets:
 * whoever could write into it could plant an allow or replace a set. So it is created with a
 * plain `mkdir` (never `-p` over someone else's), mode 0700, owned by the workers' user; one that
 * exists already is accepted only when it is a real directory of ours or theirs that nobody else
 * can enter (a render of the same run again), and refused otherwise.
 */
export async function createMemoryDir(dir: string): Promise<void> {
  const owner = workerOwner();
  await mkdir(path.dirname(dir), { recursive: true });
  const created = await mkdir(dir, { mode: 0o700 }).then(
    () => true,
    (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
      return false;
    },
  );
  if (!created) {
    const found = await lstat(dir);
    const ours = found.uid === owner.uid || found.uid === process.getuid?.();
    if (!found.isDirectory() || !ours || (found.mode & 0o077) !== 0) {
      throw new TypeError(
        `refusing the memory directory "${dir}": it exists and is not this run's own ` +
          `(${found.isSymbolicLink() ? 'a symlink' : found.isDirectory() ? 'a directory' : 'not a directory'}, ` +
          `owner uid ${found.uid}, mode ${(found.mode & 0o7777).toString(8)}); remove it or choose another SG_MEMORY_DIR`,
      );
    }
  }
  await chmod(dir, 0o700);
  // Whose run this is: the next run removes the directory once this process is gone
  // (removeStaleMemoryDirs), should this one have died before its clean-up.
  await writeFile(path.join(dir, OWNER_FILE), `${process.pid}\n`, { mode: 0o600 });
  if (process.getuid?.() === 0) await chown(dir, owner.uid, owner.gid);
}

/** The marker createMemoryDir leaves in a run's memory directory: the runner's process id. */
export const OWNER_FILE = '.secret-gate-runner';
/** The names localMemoryDir gives (`secret-gate-` + 16 hex digits). */
const LOCAL_NAME = /^secret-gate-[0-9a-f]{16}$/;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: a process of another user holds that id now, so it is alive.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the memory directories earlier local runs left under `parent` (a runner killed before
 * its clean-up leaves the edge cache's tokens and the secret sets behind): only a real directory
 * of a local run's name holding this user's marker, whose runner is gone. Anything else, another
 * user's or a live run's, is left alone. Returns the directories removed.
 */
export function removeStaleMemoryDirs(parent = '/dev/shm'): string[] {
  const uid = process.getuid?.();
  let names: string[];
  try {
    names = readdirSync(parent).filter((name) => LOCAL_NAME.test(name));
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const dir = path.join(parent, name);
    try {
      const marker = path.join(dir, OWNER_FILE);
      const found = lstatSync(marker);
      if (!lstatSync(dir).isDirectory() || !found.isFile() || found.uid !== uid) continue;
      const pid = Number(readFileSync(marker, 'utf8').trim());
      if (!Number.isSafeInteger(pid) || pid <= 1 || alive(pid)) continue;
    } catch {
      continue; // no marker we can read: not ours to judge
    }
    rmSync(dir, { recursive: true, force: true });
    removed.push(dir);
  }
  return removed;
}

/** The SG_ names referenced by a template, in order of first use. */
export function referencedNames(text: string): string[] {
  const names = new Set<string>();
  for (const m of text.matchAll(REFERENCE)) {
    const name = (m[1] ?? m[2]) as string;
    if (name.startsWith('SG_')) names.add(name);
  }
  return [...names];
}

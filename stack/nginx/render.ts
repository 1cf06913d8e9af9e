// Renders nginx/templates the way the official nginx image does at start (envsubst with
// NGINX_ENVSUBST_FILTER=^SG_), into a prefix directory a local `nginx -p` run can use as is.
import { chmod, chown, lstat, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { workerOwner } from '../worker-access.js';

export { dockerNginxEnv, localNginxEnv, nginxPaths, nginxVariables } from './variables.js';
export type { LocalNginxOptions, NginxEnv, NginxVariable, NginxVariableName } from './variables.js';

export interface RenderOptions {
  /** Source tree laid out like /etc/nginx, files ending in `.template`. */
  readonly templatesDir: string;
  /** Destination (the NGINX prefix); created when missing. */
  readonly outDir: string;
  /** Environment; only names starting with `SG_` are used, like the image's filter. */
  readonly env: Readonly<Record<string, string | undefined>>;
}

export interface RenderResult {
  /** `outDir/nginx.conf`, for `nginx -p outDir -c …`. */
  readonly confPath: string;
  /** Every file written, relative to outDir, sorted. */
  readonly files: readonly string[];
}

const SUBSTITUTED = /^SG_/;
// envsubst replaces both `${NAME}` and `$NAME`; NGINX's own variables are lower-case ($uri).
const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g;
// Values land inside NGINX directives and quoted strings: a quote or a line break would change
// the configuration's structure rather than fill in a value.
const UNSAFE_VALUE = /["\r\n\0]/;
// Directories the rendered configuration writes into; a prefix run needs them to exist.
const WRITABLE_DIRS = ['SG_RUN_DIR', 'SG_TEMP_DIR', 'SG_LOG_DIR'] as const;

/**
 * Renders every `*.template` below `templatesDir` to the same relative path without the suffix
 * under `outDir`, substituting `${SG_*}` / `$SG_*` from `env` and leaving every other `$name`
 * untouched. Throws one TypeError naming every SG_ variable that is referenced but not given
 * (empty counts as given, as with envsubst) and every value that would break the syntax.
 * Also creates the run, temp and log directories named by SG_RUN_DIR, SG_TEMP_DIR and SG_LOG_DIR,
 * and the memory directory SG_MEMORY_DIR exclusively (createMemoryDir).
 */
export async function renderNginxConfig(options: RenderOptions): Promise<RenderResult> {
  const env = substitutableEnv(options.env);
  const templates = await listTemplates(options.templatesDir);
  if (templates.length === 0) {
    throw new TypeError(`no *.template files under "${options.templatesDir}"`);
  }
  const sources = await Promise.all(
    templates.map(async (rel) => ({
      rel,
      text: await readFile(path.join(options.templatesDir, rel), 'utf8'),
    })),
  );
  assertRenderable(sources, env);

  const outDir = path.resolve(options.outDir);
  await mkdir(outDir, { recursive: true });
  // Workers run as an unprivileged user when the master is root; they must reach the prefix.
  await chmod(outDir, 0o755);
  const files: string[] = [];
  for (const { rel, text } of sources) {
    const target = path.join(outDir, rel.slice(0, -'.template'.length));
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, substitute(text, env));
    files.push(path.relative(outDir, target));
  }
  for (const name of WRITABLE_DIRS) {
    const dir = env.get(name);
    if (dir) await mkdir(path.resolve(outDir, dir), { recursive: true });
  }
  const memoryDir = env.get('SG_MEMORY_DIR');
  if (memoryDir) await createMemoryDir(path.resolve(outDir, memoryDir));
  return { confPath: path.join(outDir, 'nginx.conf'), files: files.sort() };
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
  if (process.getuid?.() === 0) await chown(dir, owner.uid, owner.gid);
}

/** Replaces the SG_ references that `env` defines, exactly like `envsubst '${SG_A} ${SG_B}…'`. */
export function substitute(text: string, env: ReadonlyMap<string, string>): string {
  return text.replace(REFERENCE, (match: string, braced?: string, bare?: string) => {
    const value = env.get((braced ?? bare) as string);
    return value === undefined ? match : value;
  });
}

/** The SG_ names referenced by a template, in order of first use. */
export function referencedNames(text: string): string[] {
  const names = new Set<string>();
  for (const m of text.matchAll(REFERENCE)) {
    const name = (m[1] ?? m[2]) as string;
    if (SUBSTITUTED.test(name)) names.add(name);
  }
  return [...names];
}

function substitutableEnv(env: Readonly<Record<string, string | undefined>>): Map<string, string> {
  const map = new Map<string, string>();
  for (const [name, value] of Object.entries(env)) {
    if (SUBSTITUTED.test(name) && typeof value === 'string') map.set(name, value);
  }
  return map;
}

function assertRenderable(
  sources: readonly { rel: string; text: string }[],
  env: ReadonlyMap<string, string>,
): void {
  const missing = new Map<string, string[]>();
  for (const { rel, text } of sources) {
    for (const name of referencedNames(text)) {
      if (!env.has(name)) missing.set(name, [...(missing.get(name) ?? []), rel]);
    }
  }
  const unsafe = [...env].filter(([, value]) => UNSAFE_VALUE.test(value)).map(([name]) => name);
  const problems: string[] = [];
  if (missing.size > 0) {
    const list = [...missing].sort(([a], [b]) => a.localeCompare(b));
    problems.push(
      `missing NGINX variables: ${list.map(([name, files]) => `${name} (${files.join(', ')})`).join('; ')}`,
    );
  }
  if (unsafe.length > 0) {
    problems.push(
      `NGINX variables must not contain quotes or line breaks: ${unsafe.sort().join(', ')}`,
    );
  }
  if (problems.length > 0) throw new TypeError(problems.join('\n'));
}

async function listTemplates(dir: string, rel = ''): Promise<string[]> {
  const entries = await readdir(path.join(dir, rel), { withFileTypes: true });
  const found: string[] = [];
  for (const entry of entries) {
    const entryRel = rel ? path.join(rel, entry.name) : entry.name;
    if (entry.isDirectory()) found.push(...(await listTemplates(dir, entryRel)));
    else if (entry.isFile() && entry.name.endsWith('.template')) found.push(entryRel);
  }
  return found.sort();
}

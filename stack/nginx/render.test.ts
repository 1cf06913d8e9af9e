import {
  chmod,
  chown,
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  readdir,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createMemoryDir,
  dockerNginxEnv,
  localNginxEnv,
  nginxPaths,
  nginxVariables,
  referencedNames,
  renderNginxConfig,
  substitute,
} from './render.js';
import { secretSetsScript } from './secret-sets-watcher.js';

let work: string;
beforeEach(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'sg-render-'));
});
afterEach(async () => {
  await rm(work, { recursive: true, force: true });
});

async function writeTemplates(files: Record<string, string>): Promise<string> {
  const dir = path.join(work, 'templates');
  for (const [rel, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), text);
  }
  return dir;
}

describe('substitute (envsubst with NGINX_ENVSUBST_FILTER=^SG_)', () => {
  const env = new Map([
    ['SG_LISTEN', '127.0.0.1:8080'],
    ['SG_EMPTY', ''],
  ]);

  it.each([
    ['listen ${SG_LISTEN};', 'listen 127.0.0.1:8080;'],
    ['listen $SG_LISTEN;', 'listen 127.0.0.1:8080;'],
    ['a${SG_EMPTY}b', 'ab'],
    ['try_files $uri /index.html;', 'try_files $uri /index.html;'],
    ['set $sg_policy secret;', 'set $sg_policy secret;'],
    ['${HOME} $PATH', '${HOME} $PATH'],
    ['${SG_UNKNOWN}', '${SG_UNKNOWN}'],
    ['$SG_LISTENER', '$SG_LISTENER'],
  ])('%j becomes %j', (input, output) => {
    expect(substitute(input, env)).toBe(output);
  });
});

describe('referencedNames', () => {
  it('lists the SG_ names in both envsubst forms, once each, and nothing of NGINX', () => {
    expect(referencedNames('${SG_A} $SG_B ${SG_A} $host ${OTHER} $sg_lower')).toEqual([
      'SG_A',
      'SG_B',
    ]);
  });
});

describe('renderNginxConfig', () => {
  it('renders every *.template to the same path without the suffix and ignores other files', async () => {
    const templatesDir = await writeTemplates({
      'nginx.conf.template': 'worker_processes ${SG_WORKERS};\n',
      'conf.d/default.conf.template': 'listen ${SG_LISTEN}; root $document_root;\n',
      'snippets/plain.conf.template': 'gzip on;\n',
      'README.md': 'not a template ${SG_LISTEN}',
    });
    const outDir = path.join(work, 'out');
    const result = await renderNginxConfig({
      templatesDir,
      outDir,
      env: { SG_WORKERS: '2', SG_LISTEN: '8080', HOME: '/root' },
    });
    expect(result).toEqual({
      confPath: path.join(outDir, 'nginx.conf'),
      files: ['conf.d/default.conf', 'nginx.conf', 'snippets/plain.conf'],
    });
    expect(await readFile(path.join(outDir, 'conf.d/default.conf'), 'utf8')).toBe(
      'listen 8080; root $document_root;\n',
    );
    expect(await readFile(path.join(outDir, 'nginx.conf'), 'utf8')).toBe('worker_processes 2;\n');
    expect(await readdir(outDir)).not.toContain('README.md');
  });

  it('fails with one error naming every missing SG_ variable and where it is used, writing nothing', async () => {
    const templatesDir = await writeTemplates({
      'nginx.conf.template': 'pid ${SG_RUN_DIR}/nginx.pid; ${SG_USER}\n',
      'conf.d/site.conf.template': 'listen ${SG_LISTEN}; root ${SG_ROOT}; pid $SG_RUN_DIR;\n',
    });
    const outDir = path.join(work, 'out');
    const rendering = renderNginxConfig({ templatesDir, outDir, env: { SG_LISTEN: '8080' } });
    await expect(rendering).rejects.toThrow(TypeError);
    await expect(rendering).rejects.toThrow(
      'missing NGINX variables: SG_ROOT (conf.d/site.conf.template); ' +
        'SG_RUN_DIR (conf.d/site.conf.template, nginx.conf.template); SG_USER (nginx.conf.template)',
    );
    await expect(stat(outDir)).rejects.toThrow();
  });

  it('counts an empty value as given, as envsubst does', async () => {
    const templatesDir = await writeTemplates({
      'nginx.conf.template': '${SG_USER_DIRECTIVE}\nevents {}\n',
    });
    const outDir = path.join(work, 'out');
    await renderNginxConfig({ templatesDir, outDir, env: { SG_USER_DIRECTIVE: '' } });
    expect(await readFile(path.join(outDir, 'nginx.conf'), 'utf8')).toBe('\nevents {}\n');
  });

  it('refuses values that would change the structure of the configuration', async () => {
    const templatesDir = await writeTemplates({
      'nginx.conf.template': 'set $a "${SG_A}"; ${SG_B}\n',
    });
    await expect(
      renderNginxConfig({
        templatesDir,
        outDir: path.join(work, 'out'),
        env: { SG_A: 'x"; return 200 "y', SG_B: 'a;\nload_module evil.so' },
      }),
    ).rejects.toThrow('NGINX variables must not contain quotes or line breaks: SG_A, SG_B');
  });

  it('creates the run, temp and log directories a prefix run writes into', async () => {
    const templatesDir = await writeTemplates({ 'nginx.conf.template': 'events {}\n' });
    const outDir = path.join(work, 'out');
    await renderNginxConfig({
      templatesDir,
      outDir,
      env: {
        SG_RUN_DIR: path.join(outDir, 'run'),
        SG_TEMP_DIR: 'temp',
        SG_LOG_DIR: path.join(outDir, 'logs'),
      },
    });
    expect((await readdir(outDir)).sort()).toEqual(['logs', 'nginx.conf', 'run', 'temp']);
    // Workers of a root master run as an unprivileged user and must be able to enter the prefix.
    expect((await stat(outDir)).mode & 0o777).toBe(0o755);
  });
});

describe('the project templates', () => {
  async function allTemplateText(): Promise<string> {
    const files = await readdir(nginxPaths.templatesDir, { recursive: true });
    const texts = await Promise.all(
      files
        .filter((f) => f.endsWith('.template'))
        .map((f) => readFile(path.join(nginxPaths.templatesDir, f), 'utf8')),
    );
    return texts.join('\n');
  }

  it('use exactly the SG_ variables the table lists (the secret-set watcher reads some of them)', async () => {
    const watcher = await readFile(secretSetsScript, 'utf8');
    const used = new Set([
      ...referencedNames(await allTemplateText()),
      ...[...watcher.matchAll(/\$\{?(SG_[A-Z_]+)/g)].map((m) => m[1] as string),
    ]);
    // SG_SECRETS_POLL and SG_JS_RUNTIME are the watcher's own knobs, not NGINX settings.
    used.delete('SG_SECRETS_POLL');
    used.delete('SG_JS_RUNTIME');
    expect([...used].sort()).toEqual(nginxVariables.map((v) => v.name).sort());
  });

  it('are documented: the NGINX table of docs/configuration.md has a row for every variable', async () => {
    const readme = await readFile(
      path.join(path.dirname(nginxPaths.templatesDir), '..', 'docs', 'configuration.md'),
      'utf8',
    );
    for (const { name } of nginxVariables) {
      expect(readme).toMatch(new RegExp(`^\\| \`${name}\` +\\|`, 'm'));
    }
  });

  it('render with the local defaults and with the values of the project image', async () => {
    const prefix = path.join(work, 'prefix');
    const env = localNginxEnv({ prefix, memoryDir: path.join(work, 'memory') });
    const local = await renderNginxConfig({
      templatesDir: nginxPaths.templatesDir,
      outDir: prefix,
      env,
    });
    const conf = await readFile(local.confPath, 'utf8');
    expect(conf).toContain('load_module /usr/lib/nginx/modules/ngx_http_js_module.so;');
    expect(conf).toContain(`pid ${path.join(prefix, 'run')}/nginx.pid;`);
    expect(conf).not.toMatch(/^\s*user /m);

    const docker = await renderNginxConfig({
      templatesDir: nginxPaths.templatesDir,
      outDir: path.join(work, 'etc-nginx'),
      // The image's own /dev/shm is its alone; here it would be the machine's.
      env: { ...dockerNginxEnv(), SG_MEMORY_DIR: path.join(work, 'image-shm') },
    });
    const dockerConf = await readFile(docker.confPath, 'utf8');
    expect(dockerConf).toContain('load_module /usr/lib/nginx/modules/ngx_http_js_module.so;');
    expect(dockerConf).toContain('pid /tmp/nginx/nginx.pid;');
    // The image runs NGINX as its unprivileged user from the start: no `user` directive.
    expect(dockerConf).not.toMatch(/^\s*user /m);
    expect(docker.files).toContain('conf.d/default.conf');
  });

  it('derive connect-src from the issuer so the SPA may call its token endpoint', () => {
    const env = localNginxEnv({ prefix: work, oidcIssuer: 'https://idp.example.test/realms/demo' });
    expect(env.SG_CSP_CONNECT_SRC).toBe('https://idp.example.test');
  });
});

describe('the memory directory (edge-cache files and secret sets)', () => {
  it('is created fresh for each local run: a random name nobody can claim ahead of it', () => {
    const a = localNginxEnv({ prefix: work }).SG_MEMORY_DIR;
    const b = localNginxEnv({ prefix: work }).SG_MEMORY_DIR;
    expect(a).not.toBe(b);
    expect(path.basename(a)).toMatch(/^secret-gate-[0-9a-f]{16}$|^memory$/);
  });

  it('is created 0700 and accepted again by a second render of the same run', async () => {
    const dir = path.join(work, 'memory');
    await createMemoryDir(dir);
    expect((await lstat(dir)).mode & 0o7777).toBe(0o700);
    await expect(createMemoryDir(dir)).resolves.toBeUndefined();
  });

  it('refuses a directory someone else made open to others', async () => {
    const dir = path.join(work, 'planted');
    await mkdir(dir);
    await chmod(dir, 0o1777);
    await expect(createMemoryDir(dir)).rejects.toThrow(/refusing the memory directory .*mode 1777/);
    expect((await lstat(dir)).mode & 0o7777).toBe(0o1777);
  });

  it('refuses a symlink in its place', async () => {
    const dir = path.join(work, 'link');
    await mkdir(path.join(work, 'elsewhere'), { mode: 0o700 });
    await symlink(path.join(work, 'elsewhere'), dir);
    await expect(createMemoryDir(dir)).rejects.toThrow(/refusing .*a symlink/);
  });

  it.skipIf(process.getuid?.() !== 0)('refuses a 0700 directory of another user', async () => {
    const dir = path.join(work, 'theirs');
    await mkdir(dir, { mode: 0o700 });
    await chown(dir, 4242, 4242);
    await expect(createMemoryDir(dir)).rejects.toThrow(/owner uid 4242/);
  });
});

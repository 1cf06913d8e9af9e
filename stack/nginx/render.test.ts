import {
  chmod,
  chown,
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  readdir,
  readlink,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createMemoryDir,
  dockerNginxEnv,
  localNginxEnv,
  nginxPaths,
  nginxVariables,
  OWNER_FILE,
  referencedNames,
  removeStaleMemoryDirs,
  renderNginxConfig,
  renderScript,
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
      'conf.d/default.conf.template':
        'listen ${SG_LISTEN}; listen $SG_LISTEN; root $document_root; ${HOME} $SG_LISTENER\n',
      'snippets/plain.conf.template': 'gzip on;\n',
      'README.md': 'not a template ${SG_LISTEN}',
    });
    const outDir = path.join(work, 'out');
    const result = await renderNginxConfig({
      templatesDir,
      outDir,
      env: { SG_WORKERS: '2', SG_LISTEN: '8080', SG_LISTENER: '', HOME: '/root' },
    });
    expect(result).toEqual({ confPath: path.join(outDir, 'nginx.conf') });
    expect((await readdir(outDir)).sort()).toEqual([
      'conf.d',
      'logs',
      'modules',
      'nginx.conf',
      'njs',
      'run',
      'snippets',
      'temp',
    ]);
    expect(await readdir(path.join(outDir, 'conf.d'))).toEqual(['default.conf']);
    // The snippets sg-render writes itself: /config.json's answer, the edge key's header, the
    // Protected Resource Metadata's answer, the set names /secret/<name> serves and the edge's
    // trace sampling.
    expect((await readdir(path.join(outDir, 'snippets'))).sort()).toEqual([
      'edge-key.conf',
      'plain.conf',
      'protected-resource-body.conf',
      'runtime-config.conf',
      'secret-set-names.conf',
      'trace-sampling.conf',
    ]);
    expect(await readFile(path.join(outDir, 'conf.d/default.conf'), 'utf8')).toBe(
      'listen 8080; listen 8080; root $document_root; ${HOME} \n',
    );
    expect(await readFile(path.join(outDir, 'nginx.conf'), 'utf8')).toBe('worker_processes 2;\n');
    expect(await readdir(outDir)).not.toContain('README.md');
  });

  it('fails with one error naming every missing SG_ variable and where it is used, writing nothing', async () => {
    const templatesDir = await writeTemplates({
      'nginx.conf.template': 'pid ${SG_RUN}/nginx.pid; ${SG_USER}\n',
      'conf.d/site.conf.template': 'listen ${SG_LISTEN}; root ${SG_ROOT}; pid $SG_RUN;\n',
    });
    const outDir = path.join(work, 'out');
    const rendering = renderNginxConfig({ templatesDir, outDir, env: { SG_LISTEN: '8080' } });
    await expect(rendering).rejects.toThrow(TypeError);
    await expect(rendering).rejects.toThrow(
      'missing NGINX variables: SG_ROOT (conf.d/site.conf.template); ' +
        'SG_RUN (conf.d/site.conf.template, nginx.conf.template); SG_USER (nginx.conf.template)',
    );
    await expect(stat(outDir)).rejects.toThrow();
  });

  it('counts an empty value as given, as envsubst does', async () => {
    const templatesDir = await writeTemplates({
      'nginx.conf.template': '${SG_EXTRA}\nevents {}\n',
    });
    const outDir = path.join(work, 'out');
    await renderNginxConfig({ templatesDir, outDir, env: { SG_EXTRA: '' } });
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

  it('refuses /config.json values that would end or escape its quoted body or break its JSON, naming no value', async () => {
    const templatesDir = await writeTemplates({ 'nginx.conf.template': 'events {}\n' });
    const rendering = renderNginxConfig({
      templatesDir,
      outDir: path.join(work, 'out'),
      env: {
        SG_OIDC_ISSUER: "https://idp.example/'a",
        SG_OIDC_SCOPE: 'openid $x',
        SG_OIDC_CLIENT_ID: 'a\\b',
        SG_OIDC_AUDIENCE: 'api\tx',
      },
    });
    await expect(rendering).rejects.toThrow(
      '/config.json values must not contain a backslash, an apostrophe, a dollar sign or a control character: SG_OIDC_ISSUER, SG_OIDC_CLIENT_ID, SG_OIDC_SCOPE, SG_OIDC_AUDIENCE',
    );
    await expect(rendering).rejects.not.toThrow('idp.example');
  });

  it('refuses a secrets file it cannot read, with the other problems', async () => {
    const templatesDir = await writeTemplates({ 'nginx.conf.template': '${SG_GONE}\n' });
    const secrets = path.join(work, 'no-such-secrets.json');
    await expect(
      renderNginxConfig({
        templatesDir,
        outDir: path.join(work, 'out'),
        env: { SG_SECRETS_FILE: secrets },
      }),
    ).rejects.toThrow(
      `missing NGINX variables: SG_GONE (nginx.conf.template); SG_SECRETS_FILE "${secrets}" cannot be read: mount the secrets file there`,
    );
  });

  it('writes the Protected Resource Metadata (RFC 9728) from the SG_ values, without OpenID Connect scopes', async () => {
    const templatesDir = await writeTemplates({ 'nginx.conf.template': 'events {}\n' });
    const body = async (env: Record<string, string>) => {
      const outDir = path.join(work, `prm-${Object.keys(env).length}`);
      await renderNginxConfig({ templatesDir, outDir, env });
      const file = path.join(outDir, 'snippets/protected-resource-body.conf');
      const snippet = await readFile(file, 'utf8');
      const quoted = /^return 200 '(.*)\\n';\n$/.exec(snippet)?.[1] ?? '';
      return JSON.parse(quoted) as unknown;
    };
    const gate = {
      SG_EXTERNAL_ORIGIN: 'https://gate.example.test',
      SG_OIDC_ISSUER: 'https://idp.example.test/realms/a',
      SG_OIDC_SCOPE: 'openid profile secrets:read offline_access * notes:write',
    };
    expect(
      await body({
        ...gate,
        SG_DPOP_ALGORITHMS: 'ES256 EdDSA',
        SG_DPOP_BOUND_TOKENS_REQUIRED: 'true',
      }),
    ).toEqual({
      resource: 'https://gate.example.test',
      authorization_servers: ['https://idp.example.test/realms/a'],
      scopes_supported: ['secrets:read', '*', 'notes:write'],
      bearer_methods_supported: ['header'],
      dpop_signing_alg_values_supported: ['ES256', 'EdDSA'],
      dpop_bound_access_tokens_required: true,
    });
    // No DPoP algorithms (empty wins over nginx/settings.env's list): the member is left out; the
    // flag defaults to false.
    expect(await body({ ...gate, SG_DPOP_ALGORITHMS: '' })).toEqual({
      resource: 'https://gate.example.test',
      authorization_servers: ['https://idp.example.test/realms/a'],
      scopes_supported: ['secrets:read', '*', 'notes:write'],
      bearer_methods_supported: ['header'],
      dpop_bound_access_tokens_required: false,
    });
  });

  it('refuses metadata values that would break its JSON, and a flag that is not true or false', async () => {
    const templatesDir = await writeTemplates({ 'nginx.conf.template': 'events {}\n' });
    await expect(
      renderNginxConfig({
        templatesDir,
        outDir: path.join(work, 'out'),
        env: {
          SG_EXTERNAL_ORIGIN: 'https://gate.example.test\\',
          SG_DPOP_ALGORITHMS: 'ES256 $x',
          SG_DPOP_BOUND_TOKENS_REQUIRED: 'yes',
        },
      }),
    ).rejects.toThrow(
      '/.well-known/oauth-protected-resource values must not contain a backslash, a quote, a dollar sign or a control character: SG_EXTERNAL_ORIGIN, SG_DPOP_ALGORITHMS; SG_DPOP_BOUND_TOKENS_REQUIRED must be true or false',
    );
  });

  it('renders the set names /secret/<name> serves, and refuses one its location cannot route', async () => {
    const templatesDir = await writeTemplates({ 'nginx.conf.template': 'events {}\n' });
    const outDir = path.join(work, 'sets');
    await renderNginxConfig({
      templatesDir,
      outDir,
      env: { SG_SPA_SECRET_SETS: 'payments audit-log' },
    });
    expect(await readFile(path.join(outDir, 'snippets/secret-set-names.conf'), 'utf8')).toBe(
      'map $sg_named_set $sg_unknown_set {\n    "" 0;\n    payments 0;\n    audit-log 0;\n    default 1;\n}\n',
    );
    await expect(
      renderNginxConfig({
        templatesDir,
        outDir: path.join(work, 'bad-sets'),
        env: { SG_SPA_SECRET_SETS: 'payments Admin secret' },
      }),
    ).rejects.toThrow(
      'SG_SPA_SECRET_SETS: "Admin" is not a set name /secret/<name> can serve (a-z, then a-z 0-9 -, at most 32; not secret); SG_SPA_SECRET_SETS: "secret" is not',
    );
  });

  describe("with SG_POLICY_FILE, the verifier's policy file", () => {
    const policies = (names: string[]) =>
      JSON.stringify({ issuers: [], policies: Object.fromEntries(names.map((n) => [n, {}])) });
    const secrets = (names: string[]) =>
      JSON.stringify({
        default: {},
        policies: Object.fromEntries(names.map((n) => [n, { default: {} }])),
      });
    /** Renders with a policy file and a secrets file naming these policies and sets. */
    async function renderWith(
      policyText: string,
      secretsText: string,
      env: Record<string, string> = {},
    ) {
      const templatesDir = await writeTemplates({ 'nginx.conf.template': 'events {}\n' });
      const dir = await mkdtemp(path.join(work, 'policy-'));
      await writeFile(path.join(dir, 'verifier.json'), policyText);
      await writeFile(path.join(dir, 'secrets.json'), secretsText);
      const outDir = path.join(dir, 'out');
      await renderNginxConfig({
        templatesDir,
        outDir,
        env: {
          SG_POLICY_FILE: path.join(dir, 'verifier.json'),
          SG_SECRETS_FILE: path.join(dir, 'secrets.json'),
          ...env,
        },
      });
      const read = (name: string) => readFile(path.join(outDir, 'snippets', name), 'utf8');
      return {
        names: await read('secret-set-names.conf'),
        config: await read('runtime-config.conf'),
      };
    }

    it('serves its policies other than `secret` (and `default`), and the SPA offers them', async () => {
      const { names, config } = await renderWith(
        policies(['secret', 'payments', 'default', 'audit-log']),
        secrets(['payments', 'audit-log']),
      );
      expect(names).toBe(
        'map $sg_named_set $sg_unknown_set {\n    "" 0;\n    payments 0;\n    audit-log 0;\n    default 1;\n}\n',
      );
      expect(config).toContain('"secretSets":"payments audit-log"');
    });

    it('serves no named set for a file with `secret` alone', async () => {
      const { names, config } = await renderWith(policies(['secret']), secrets([]));
      expect(names).toBe('map $sg_named_set $sg_unknown_set {\n    "" 0;\n    default 1;\n}\n');
      expect(config).not.toContain('secretSets');
    });

    it.each([
      [
        'a policy without a set in the secrets file, and a set without a policy',
        policies(['secret', 'payments']),
        secrets(['audit']),
        /policy "payments" has no set in the secrets file .*secrets\.json, set "audit" in the secrets file has no policy in .*verifier\.json \(the policy file .* and the secrets file .* must name the same sets\)/,
      ],
      [
        'a file that is not JSON',
        '{"policies":',
        secrets([]),
        /policy file .*verifier\.json is not JSON/,
      ],
      ['a file without policies', '{"issuers":[]}', secrets([]), /has no "policies" object/],
      [
        'a name /secret/<name> cannot route',
        policies(['secret', 'Payments']),
        secrets(['Payments']),
        /policy "Payments" in .* is not a name \/secret\/<name> can serve/,
      ],
    ])('refuses %s, naming it', async (_title, policyText, secretsText, problem) => {
      await expect(renderWith(policyText, secretsText)).rejects.toThrow(problem);
    });

    it('refuses SG_SPA_SECRET_SETS beside it: the names have one source', async () => {
      await expect(
        renderWith(policies(['secret', 'payments']), secrets(['payments']), {
          SG_SPA_SECRET_SETS: 'payments',
        }),
      ).rejects.toThrow(
        'SG_SPA_SECRET_SETS and SG_POLICY_FILE are both set: the named sets come from the policy file',
      );
    });
  });

  it('writes /config.json from the SG_OIDC_* values, naming the CloudFront image only when one is set', async () => {
    const templatesDir = await writeTemplates({ 'nginx.conf.template': 'events {}\n' });
    const body = async (env: Record<string, string>) => {
      const outDir = path.join(work, `out-${Object.keys(env).length}`);
      await renderNginxConfig({ templatesDir, outDir, env });
      const snippet = await readFile(path.join(outDir, 'snippets/runtime-config.conf'), 'utf8');
      const quoted = /^return 200 '(.*)\\n';\n$/.exec(snippet)?.[1] ?? '';
      return JSON.parse(quoted) as unknown;
    };
    const oidc = {
      SG_OIDC_ISSUER: 'https://idp.example.test/realms/a</script>',
      SG_OIDC_CLIENT_ID: 'spa-demo',
      SG_OIDC_SCOPE: 'openid secrets:read',
      SG_OIDC_AUDIENCE: 'secret-gate-api',
    };
    expect(await body(oidc)).toEqual({
      issuer: 'https://idp.example.test/realms/a</script>',
      clientId: 'spa-demo',
      scope: 'openid secrets:read',
      audience: 'secret-gate-api',
      // Unset: the RFC 8707 resource parameter; empty: none (Keycloak, Okta, Entra, Cognito).
      audienceParameters: 'resource',
    });
    for (const parameters of ['audience', 'resource audience', ''])
      expect(await body({ ...oidc, SG_OIDC_AUDIENCE_PARAMETERS: parameters })).toMatchObject({
        audienceParameters: parameters,
      });
    const image = 'https://cdn.example.test/private/logo.png';
    expect(await body({ ...oidc, SG_CLOUDFRONT_IMAGE_URL: image })).toMatchObject({
      cloudfront: { imageUrl: image },
    });
    expect(
      await body({ ...oidc, SG_CLOUDFRONT_IMAGE_URL: image, SG_SPA_SECRET_SETS: 'payments admin' }),
    ).toMatchObject({ cloudfront: { imageUrl: image }, secretSets: 'payments admin' });
  });

  it("writes NGINX's edge key header from SG_EDGE_KEY_FILE, readable by its owner only, and nothing without it", async () => {
    const templatesDir = await writeTemplates({ 'nginx.conf.template': 'events {}\n' });
    const keyFile = path.join(work, 'edge-key');
    const key = 'a1B2-_.~+/='.padEnd(64, '9');
    await writeFile(keyFile, `${key}\n`);
    const keyed = path.join(work, 'keyed');
    await renderNginxConfig({ templatesDir, outDir: keyed, env: { SG_EDGE_KEY_FILE: keyFile } });
    const snippet = path.join(keyed, 'snippets/edge-key.conf');
    expect(await readFile(snippet, 'utf8')).toBe(`proxy_set_header X-SG-Edge-Key "${key}";\n`);
    expect((await stat(snippet)).mode & 0o777).toBe(0o600);
    const plain = path.join(work, 'plain');
    await renderNginxConfig({ templatesDir, outDir: plain, env: {} });
    expect(await readFile(path.join(plain, 'snippets/edge-key.conf'), 'utf8')).not.toContain(
      'proxy_set_header',
    );
  });

  it('refuses an edge key file it cannot read, or one that is short or would break the header, naming no key', async () => {
    const templatesDir = await writeTemplates({ 'nginx.conf.template': 'events {}\n' });
    const keyFile = path.join(work, 'edge-key');
    const render = (content?: string) =>
      (content === undefined ? Promise.resolve() : writeFile(keyFile, content)).then(() =>
        renderNginxConfig({
          templatesDir,
          outDir: path.join(work, 'out'),
          env: { SG_EDGE_KEY_FILE: keyFile },
        }),
      );
    await expect(render()).rejects.toThrow(`SG_EDGE_KEY_FILE "${keyFile}" cannot be read`);
    const shape = `SG_EDGE_KEY_FILE "${keyFile}" must hold 32 to 256 characters`;
    for (const bad of ['short', `${'k'.repeat(40)}"; add_header X 1; #`, `${'k'.repeat(40)}\nx`]) {
      const rendering = render(bad);
      await expect(rendering).rejects.toThrow(shape);
      await expect(rendering).rejects.not.toThrow('kkkk');
    }
  });

  it('makes what the prefix-relative paths of a run need: run, temp, logs, njs and modules', async () => {
    const templatesDir = await writeTemplates({ 'nginx.conf.template': 'events {}\n' });
    const outDir = path.join(work, 'out');
    await renderNginxConfig({ templatesDir, outDir, env: {}, modulesDir: '/opt/nginx/modules' });
    for (const dir of ['run', 'temp', 'logs'])
      expect((await stat(path.join(outDir, dir))).isDirectory()).toBe(true);
    expect(await readlink(path.join(outDir, 'njs'))).toBe(nginxPaths.njsDir);
    expect(await readlink(path.join(outDir, 'modules'))).toBe('/opt/nginx/modules');
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

  it('use exactly the SG_ variables the table lists (the render script and the secret-set watcher read some of them)', async () => {
    const scripts =
      (await readFile(secretSetsScript, 'utf8')) + (await readFile(renderScript, 'utf8'));
    const used = new Set([
      ...referencedNames(await allTemplateText()),
      ...[...scripts.matchAll(/\$\{?(SG_[A-Z_]+)/g)].map((m) => m[1] as string),
    ]);
    // SG_SECRETS_POLL and SG_JS_RUNTIME are the watcher's own knobs, not NGINX settings;
    // SG_EDGE_KEY_FILE is the render script's, set by whoever generates the key (the runner, an
    // init container), never an image default (docs/SECURITY.md).
    used.delete('SG_SECRETS_POLL');
    used.delete('SG_JS_RUNTIME');
    used.delete('SG_EDGE_KEY_FILE');
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
    // Every path is relative to the prefix, the same in the image and in a local run.
    expect(conf).toContain('load_module modules/ngx_http_js_module.so;');
    expect(conf).toContain('pid run/nginx.pid;');
    expect(conf).not.toMatch(/^\s*user /m);

    const docker = await renderNginxConfig({
      templatesDir: nginxPaths.templatesDir,
      outDir: path.join(work, 'etc-nginx'),
      // The image's own /dev/shm is its alone; here it would be the machine's.
      env: {
        ...dockerNginxEnv(),
        SG_MEMORY_DIR: path.join(work, 'image-shm'),
        SG_SECRETS_FILE: env.SG_SECRETS_FILE,
        // Where compose mounts the dev verifier's file, whose named sets NGINX serves.
        SG_POLICY_FILE: path.join(nginxPaths.templatesDir, '../../stack/compose/verifier.json'),
      },
    });
    // The image runs NGINX as its unprivileged user from the start: no `user` directive.
    const dockerConf = await readFile(docker.confPath, 'utf8');
    expect(dockerConf).toContain('load_module modules/ngx_http_js_module.so;');
    expect(dockerConf).toContain('pid run/nginx.pid;');
    expect(dockerConf).not.toMatch(/^\s*user /m);
  });

  it('each start by saying what they guard, as every njs module does', async () => {
    const files = (await readdir(nginxPaths.templatesDir, { recursive: true })).filter((f) =>
      f.endsWith('.template'),
    );
    expect(files.length).toBeGreaterThan(10);
    for (const file of files) {
      const text = await readFile(path.join(nginxPaths.templatesDir, file), 'utf8');
      expect(text, file).toMatch(/^# secret-gate guards here: \S/);
    }
    const modules = (await readdir(nginxPaths.njsDir)).filter((f) => f.endsWith('.js'));
    for (const file of modules) {
      const header = (await readFile(path.join(nginxPaths.njsDir, file), 'utf8')).slice(0, 200);
      expect(header, file).toMatch(/^\/\/ secret-gate: [^\n]*guards/);
    }
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

describe('memory directories earlier runs left behind', () => {
  /** A run's directory under `work`, with a token file and, unless null, a marker naming `pid`. */
  async function leftBy(name: string, pid: number | null): Promise<string> {
    const dir = path.join(work, name);
    await mkdir(path.join(dir, 'sg-edge-cache'), { recursive: true, mode: 0o700 });
    await writeFile(path.join(dir, 'sg-edge-cache', 'entry'), 'Authorization: Bearer eyJ…');
    if (pid !== null) await writeFile(path.join(dir, OWNER_FILE), `${pid}\n`);
    return dir;
  }

  it('marks a run’s directory with the runner’s process id', async () => {
    const dir = path.join(work, 'memory');
    await createMemoryDir(dir);
    expect(await readFile(path.join(dir, OWNER_FILE), 'utf8')).toBe(`${process.pid}\n`);
  });

  it('removes one whose runner is gone, and leaves a live run’s, an unmarked one and other names', async () => {
    const gone = spawnSync('true').pid;
    const stale = await leftBy('secret-gate-00112233aabbccdd', gone);
    const live = await leftBy('secret-gate-0123456789abcdef', process.pid);
    const unmarked = await leftBy('secret-gate-fedcba9876543210', null);
    const other = await leftBy('secret-gate-other', gone);
    const linked = await leftBy('secret-gate-aaaaaaaaaaaaaaaa', null);
    await writeFile(path.join(work, 'marker'), `${gone}\n`);
    await symlink(path.join(work, 'marker'), path.join(linked, OWNER_FILE));
    expect(removeStaleMemoryDirs(work)).toEqual([stale]);
    await expect(lstat(stale)).rejects.toThrow('ENOENT');
    for (const kept of [live, unmarked, other, linked])
      expect((await lstat(kept)).isDirectory()).toBe(true);
    expect(removeStaleMemoryDirs(path.join(work, 'nowhere'))).toEqual([]);
  });
});

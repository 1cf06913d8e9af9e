// docker-compose.yaml cannot run on every machine, so it is held to the local runner here: the same
// services, ports, variable names and values (adjusted only for container addresses), health checks
// on the same endpoints, and the same verifier policy.
import { OTEL_VARIABLES } from '../../verifier/src/tracing/otel-env.js';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { dockerNginxEnv, localNginxEnv, nginxDefaults } from '../../stack/nginx/render.js';
import { REPO_ROOT } from '../../stack/start-stack.js';
import { ENVIRONMENT } from '../../verifier/src/config/load.js';
import { createMinter, type MintEntry } from '../../verifier/src/minted/minter-api.js';
import {
  COMPOSE_MINT_KEY_DIR,
  MINTED_DEMO_VALUES,
  mintedDemoSection,
} from '../../stack/minted-demo.js';
import {
  DEFAULT_PORTS,
  SERVICE_NAMES,
  VERIFIER_NODE_FLAGS,
  idpEnv,
  verifierConfig,
  verifierEnv,
} from '../../stack/service-env.js';

interface ComposeService {
  image?: string;
  pull_policy?: string;
  read_only?: boolean;
  init?: boolean;
  tmpfs?: string[];
  build?: { context: string; dockerfile: string };
  environment?: Record<string, string>;
  profiles?: string[];
  ports?: string[];
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  secrets?: string[];
  command?: string[];
  group_add?: string[];
}

const compose = parse(readFileSync(join(REPO_ROOT, 'docker-compose.yaml'), 'utf8'), {
  merge: true,
}) as {
  services: Record<string, ComposeService>;
  secrets?: Record<string, { file?: string }>;
  volumes?: Record<string, unknown>;
};
const service = (name: string): ComposeService => {
  const found = compose.services[name];
  if (!found) throw new Error(`docker-compose.yaml has no "${name}" service`);
  return found;
};
const names = (env: object | undefined) => Object.keys(env ?? {}).sort();

/**
 * A value as `docker compose` reads it with the given variables set: `${NAME:-default}` takes the
 * default when NAME is unset or empty, `${NAME-default}` only when it is unset.
 */
const interpolate = (value: string, env: Record<string, string> = {}): string =>
  value.replace(
    /\$\{([A-Z_]+)(:?)-([^}]*)\}/g,
    (_all, name: string, colon: string, fallback: string) => {
      const given = env[name];
      return given === undefined || (colon === ':' && given === '') ? fallback : given;
    },
  );
const interpolated = (env: Record<string, string> | undefined, vars?: Record<string, string>) =>
  Object.fromEntries(
    Object.entries(env ?? {}).map(([name, value]) => [name, interpolate(value, vars)]),
  );

/**
 * The runner's variables for each service, built by the same functions startStack() uses; on TCP
 * the runner gives the verifier and NGINX the edge key file of the run.
 */
const runner = {
  idp: idpEnv({
    host: '127.0.0.1',
    port: DEFAULT_PORTS.idp,
    issuer: 'http://127.0.0.1:8081',
    audience: 'secret-gate-api',
  }),
  verifier: verifierEnv({
    listen: '127.0.0.1:8090',
    configFile: '/tmp/verifier.json',
    edgeKeyFile: '/tmp/edge-key',
  }),
  nginx: { ...localNginxEnv({ prefix: '/tmp/prefix' }), SG_EDGE_KEY_FILE: '/tmp/edge-key' },
};

describe('docker-compose.yaml mirrors the local runner', () => {
  it('defines exactly the runner services: idp, verifier, nginx (and Jaeger behind a profile)', () => {
    const always = Object.entries(compose.services).filter(
      ([, definition]) => !definition.profiles,
    );
    expect(always.map(([name]) => name).sort()).toEqual([...SERVICE_NAMES].sort());
    expect(compose.services.jaeger?.profiles).toEqual(['tracing']);
  });

  it.each(['idp', 'nginx'] as const)(
    'publishes %s on its default port (movable by a variable), on loopback only',
    (name) => {
      const port = DEFAULT_PORTS[name];
      expect(service(name).ports).toHaveLength(1);
      expect(service(name).ports?.[0]).toMatch(
        new RegExp(`^127\\.0\\.0\\.1:\\$\\{SECRET_GATE_[A-Z_]*PORT:-${port}\\}:${port}$`),
      );
    },
  );

  it('publishes no port of the verifier: only NGINX calls it, with the edge key', () => {
    expect(service('verifier').ports).toBeUndefined();
  });

  it('has the verifier make the edge key on a volume NGINX reads, through the group, read-only', () => {
    const verifier = service('verifier');
    const nginx = service('nginx');
    // After the minted values' parent keys (below), the verifier starts as the image does.
    expect(verifier.command?.slice(0, 2)).toEqual(['sh', '-c']);
    expect(verifier.command?.[2]).toMatch(
      / && exec node verifier\/dist\/main\.js --make-edge-key$/,
    );
    const keyFile = verifier.environment?.VERIFIER_EDGE_KEY_FILE ?? '';
    const nginxKeyFile = nginx.environment?.SG_EDGE_KEY_FILE ?? '';
    // The same named volume, the same file in it: the verifier's read-write, NGINX's read-only.
    const on = (volumes: string[] | undefined, file: string) =>
      volumes
        ?.map((volume) => volume.split(':'))
        .find(([, at]) => at !== undefined && file.startsWith(`${at}/`));
    const [volume, at = '', mode] = on(verifier.volumes, keyFile) ?? [];
    const [nginxVolume, nginxAt = '', nginxMode] = on(nginx.volumes, nginxKeyFile) ?? [];
    expect(volume).toBe('edge-key');
    expect(nginxVolume).toBe('edge-key');
    expect([mode, nginxMode]).toEqual([undefined, 'ro']);
    expect(keyFile.slice(at.length)).toBe(nginxKeyFile.slice(nginxAt.length));
    expect(compose.volumes).toHaveProperty('edge-key');
    // The key is 0640, the verifier's (node, 1000): NGINX (101) reads it as a member of its group.
    expect(nginx.group_add).toEqual(['1000']);
  });

  it("builds NGINX from nginx/Dockerfile with everything baked in: only the dev secrets, the verifier's policy file and the edge key are mounted", () => {
    const nginx = service('nginx');
    const docker = dockerNginxEnv();
    // Nothing built on the host (no ./spa/dist), so `docker compose up` works on a fresh clone.
    expect(nginx.volumes?.map((volume) => interpolate(volume))).toEqual([
      `./nginx/secrets.dev.json:${docker.SG_SECRETS_FILE}:ro`,
      `./stack/compose/verifier.json:${docker.SG_POLICY_FILE}:ro`,
      'edge-key:/run/secret-gate:ro',
    ]);
  });

  it.each(SERVICE_NAMES)(
    'builds %s itself and never pulls it, read-only, with a tmpfs only for NGINX',
    (name) => {
      const { build, image, pull_policy, read_only, tmpfs } = service(name);
      expect({ build, image, pull_policy, read_only }).toEqual({
        build: { context: '.', dockerfile: `${name}/Dockerfile` },
        image: `secret-gate-${name}:\${SECRET_GATE_TAG:-dev}`,
        pull_policy: 'never',
        read_only: true,
      });
      expect(tmpfs).toEqual(name === 'nginx' ? ['/tmp'] : undefined);
    },
  );

  it('gives the Node services an init process, so `docker compose down` takes under a second', () => {
    expect(service('idp').init).toBe(true);
    expect(service('verifier').init).toBe(true);
  });

  it('gives NGINX, over the image defaults, every SG_ variable the runner sets, with the documented image values', () => {
    const env = interpolated(service('nginx').environment);
    const own = Object.fromEntries(Object.entries(env).filter(([name]) => name.startsWith('SG_')));
    const sg = { ...nginxDefaults(), ...own };
    expect(names(sg)).toEqual(names(runner.nginx));
    expect(sg).toEqual({ ...dockerNginxEnv(), SG_EDGE_KEY_FILE: '/run/secret-gate/edge-key' });
    // Only what differs from nginx/settings.env: a default has one home.
    const defaults: Record<string, string> = nginxDefaults();
    expect(Object.entries(own).filter(([name, value]) => defaults[name] === value)).toEqual([]);
  });

  it('passes the flat SECRETS as a mounted file, never as a variable docker inspect would show', () => {
    for (const [name, definition] of Object.entries(compose.services))
      expect(Object.keys(definition.environment ?? {}), name).not.toContain('SECRETS');
    expect(service('nginx').secrets).toEqual(['flat-secrets']);
    // Unset on the host: an empty file, so the secrets file is served.
    expect(compose.secrets?.['flat-secrets']).toEqual({
      file: '${SECRET_GATE_FLAT_SECRETS:-/dev/null}',
    });
  });

  it('gives the IdP and the verifier the variables the runner sets, with container addresses', () => {
    expect(names(service('idp').environment)).toEqual(names(runner.idp));
    expect(service('idp').environment).toMatchObject({
      ...runner.idp,
      IDP_HOST: '0.0.0.0',
      IDP_ISSUER: 'http://localhost:8081',
    });
    expect(names(service('verifier').environment)).toEqual(
      expect.arrayContaining(names(runner.verifier)),
    );
    expect(service('verifier').environment).toMatchObject({
      VERIFIER_LISTEN: '0.0.0.0:8090',
      VERIFIER_LOG_LEVEL: `\${VERIFIER_LOG_LEVEL:-${runner.verifier.VERIFIER_LOG_LEVEL}}`,
    });
  });

  it('passes every other documented VERIFIER_* setting through from the environment', () => {
    const environment = service('verifier').environment ?? {};
    const stacks = new Set([
      'VERIFIER_LISTEN',
      'VERIFIER_CONFIG',
      'VERIFIER_LOG_LEVEL',
      'VERIFIER_EDGE_KEY_FILE',
    ]);
    for (const { env: name } of ENVIRONMENT.filter((row) => !stacks.has(row.env)))
      expect(environment[name], name).toBe(`\${${name}:-}`);
    // The OpenTelemetry specification's own variables (docs/tracing.md), passed through as well.
    for (const name of OTEL_VARIABLES) expect(environment[name], name).toBe(`\${${name}:-}`);
    const known = new Set([...ENVIRONMENT.map((row) => row.env), ...OTEL_VARIABLES]);
    expect(Object.keys(environment).filter((name) => !known.has(name))).toEqual([]);
  });

  it('mounts a verifier config that is the runner policy for the compose addresses', () => {
    const verifier = service('verifier');
    const target = verifier.environment?.VERIFIER_CONFIG ?? '';
    const mount = verifier.volumes
      ?.map((volume) => interpolate(volume))
      .find((volume) => volume.split(':')[1] === target);
    expect(mount).toBeDefined();
    // `$schema` is for editors (verifier/config.schema.json); the verifier ignores it.
    const { $schema: _schema, ...file } = JSON.parse(
      readFileSync(join(REPO_ROOT, (mount ?? '').split(':')[0] ?? ''), 'utf8'),
    ) as Record<string, unknown>;
    const runnerPolicy = verifierConfig({
      issuer: 'http://localhost:8081',
      jwksUri: 'http://idp:8081/jwks',
      audience: 'secret-gate-api',
      // The dev IdP is reached by its service name over plain http: the explicit opt-in,
      // without which the verifier refuses to start.
      allowHttp: true,
    }) as { policies: Record<string, object> };
    // `npm start`'s minted values in the `secret` set, over the keys on the compose volume.
    const secret = {
      ...runnerPolicy.policies.secret,
      mint: mintedDemoSection(COMPOSE_MINT_KEY_DIR),
    };
    expect(file).toEqual({ ...runnerPolicy, policies: { ...runnerPolicy.policies, secret } });
  });

  it("takes your policy file and its sets' values in one variable each; NGINX reads the names from the same file (docs/configuration.md)", () => {
    const verifier = service('verifier');
    const nginx = service('nginx');
    const mine = {
      SECRET_GATE_POLICY_FILE: './policies.json',
      SECRET_GATE_SECRETS_FILE: './secrets.json',
    };
    const target = verifier.environment?.VERIFIER_CONFIG ?? '';
    expect(verifier.volumes?.map((volume) => interpolate(volume, mine))).toContain(
      `./policies.json:${target}:ro`,
    );
    // The same file, at the same path, where SG_POLICY_FILE points: no second list of names.
    expect(nginx.environment?.SG_POLICY_FILE).toBe(target);
    expect(nginx.volumes?.map((volume) => interpolate(volume, mine))).toContain(
      `./policies.json:${target}:ro`,
    );
    expect(nginx.environment).not.toHaveProperty('SG_SPA_SECRET_SETS');
    expect(nginx.volumes?.map((volume) => interpolate(volume, mine))).toContain(
      `./secrets.json:${dockerNginxEnv().SG_SECRETS_FILE}:ro`,
    );
  });

  it('serves by default exactly the named sets of the default policy file, which the dev secrets hold too', () => {
    const run = spawnSync(
      process.execPath,
      [
        join(REPO_ROOT, 'nginx/njs/policy-names-cli.js'),
        '--',
        join(REPO_ROOT, 'stack/compose/verifier.json'),
        join(REPO_ROOT, 'nginx/secrets.dev.json'),
        'http://localhost:8081',
      ],
      { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } },
    );
    expect([run.stdout, run.stderr]).toEqual(['names payments\n', '']);
  });

  it('health-checks the IdP on the endpoint the runner waits for (/readyz)', () => {
    expect(service('idp').healthcheck?.test.join(' ')).toContain('http://127.0.0.1:8081/readyz');
  });

  it("health-checks NGINX's /hello, as the runner waits for it, with the image's probe", () => {
    // The probe asks the address SG_LISTEN names, over loopback.
    expect(service('nginx').healthcheck?.test).toEqual(['CMD', 'sg-probe', '/hello']);
  });

  it("health-checks the verifier's /readyz, as the runner waits for it, with the image's probe", () => {
    // The probe asks the listener VERIFIER_LISTEN names (0.0.0.0:8090 here, asked over loopback).
    expect(service('verifier').healthcheck?.test).toEqual([
      'CMD',
      'node',
      'verifier/dist/probe.js',
      '/readyz',
    ]);
  });

  it('starts in the runner order: idp, then verifier, then nginx, each once the previous is healthy', () => {
    expect(service('verifier').depends_on).toEqual({ idp: { condition: 'service_healthy' } });
    expect(service('nginx').depends_on).toEqual({ verifier: { condition: 'service_healthy' } });
  });

  it('bakes a default for every SG_ variable into the NGINX image: the image values, loopback verifier', () => {
    const text = readFileSync(join(REPO_ROOT, 'nginx/Dockerfile'), 'utf8');
    const runtime = text.slice(text.lastIndexOf('\nFROM '));
    // The defaults come from nginx/settings.env, beside the scripts that load it, never from ENV.
    expect(runtime).toMatch(/^COPY nginx\/settings\.env \/etc\/nginx\/settings\.env$/m);
    expect(runtime).toMatch(/^COPY nginx\/bin \/etc\/nginx\/bin$/m);
    expect(runtime).not.toMatch(/\bSG_[A-Z_]+=/);
    const loaded = spawnSync(
      'sh',
      ['-c', `sg_bin=${join(REPO_ROOT, 'nginx/bin')}; . "$sg_bin/sg-settings"; env`],
      { env: { PATH: process.env.PATH ?? '' }, encoding: 'utf8' },
    ).stdout;
    const defaults = Object.fromEntries(
      loaded
        .split('\n')
        .filter((line) => line.startsWith('SG_'))
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    // Without a default the entrypoint refuses to start: `docker run` alone must work. The image
    // reads no policy file (no named set); compose mounts the dev verifier's.
    expect(defaults).toEqual({
      ...dockerNginxEnv(),
      SG_VERIFIER_ADDR: '127.0.0.1:8090',
      SG_POLICY_FILE: '',
    });
  });

  it.each(['verifier/Dockerfile', 'idp/Dockerfile', 'nginx/Dockerfile'])(
    '%s is multi-stage, non-root, health-checked, and starts only from images setup.sh can make',
    (path) => {
      const text = readFileSync(join(REPO_ROOT, path), 'utf8');
      const bases = [...text.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
      expect(bases.length).toBeGreaterThan(1);
      const stages = [...text.matchAll(/^FROM \S+ AS (\S+)/gm)].map((m) => m[1]);
      for (const base of bases)
        expect(['debian:bookworm-slim', 'node:24-trixie-slim', ...stages]).toContain(base);
      // A `# syntax=` line makes BuildKit pull its frontend image from a registry.
      expect(text).not.toMatch(/^# *syntax=/m);
      expect(text).toMatch(/^USER (node|nginx)$/m);
      expect(text).toMatch(/^HEALTHCHECK /m);
      const runtime = bases.at(-1);
      expect(runtime).toBe(
        path === 'nginx/Dockerfile' ? 'debian:bookworm-slim' : 'node:24-trixie-slim',
      );
    },
  );

  it("runs the verifier image with the runner's Node flags, so both hold the same memory bound", () => {
    const text = readFileSync(join(REPO_ROOT, 'verifier/Dockerfile'), 'utf8');
    const runtime = text.slice(text.lastIndexOf('\nFROM '));
    expect(/NODE_OPTIONS="([^"]*)"/.exec(runtime)?.[1]).toBe(VERIFIER_NODE_FLAGS.join(' '));
  });
});

describe("docker-compose.yaml's minted values, as npm start's", () => {
  const verifier = service('verifier');
  const mounted = (target: string) =>
    verifier.volumes?.map((volume) => volume.split(':')).find(([, at]) => at === target);
  /** The key script as the verifier's command runs it, on a fresh directory. */
  const runScript = (dir: string) => {
    const [source = ''] = mounted('/etc/secret-gate/minted-demo-keys.mjs') ?? [];
    return spawnSync(process.execPath, [join(REPO_ROOT, source), dir], { encoding: 'utf8' });
  };
  const composeMint = () =>
    (
      JSON.parse(readFileSync(join(REPO_ROOT, 'stack/compose/verifier.json'), 'utf8')) as {
        policies: { secret: { mint: Record<string, MintEntry> } };
      }
    ).policies.secret.mint;

  it("keeps the parent keys on a volume of their own, the verifier's only, and runs the script first", () => {
    expect(mounted(COMPOSE_MINT_KEY_DIR)).toEqual(['mint-keys', COMPOSE_MINT_KEY_DIR]);
    expect(compose.volumes).toHaveProperty('mint-keys');
    expect(mounted('/etc/secret-gate/minted-demo-keys.mjs')).toEqual([
      './stack/compose/minted-demo-keys.mjs',
      '/etc/secret-gate/minted-demo-keys.mjs',
      'ro',
    ]);
    expect(verifier.command?.[2]).toMatch(
      new RegExp(`^node /etc/secret-gate/minted-demo-keys\\.mjs ${COMPOSE_MINT_KEY_DIR} && `),
    );
    for (const volume of service('nginx').volumes ?? []) expect(volume).not.toMatch(/^mint-keys:/);
    // The image holds the empty directory (the volume takes its owner and mode), never a key.
    const dockerfile = readFileSync(join(REPO_ROOT, 'verifier/Dockerfile'), 'utf8');
    expect(dockerfile).toContain(`install -d -o node -g node -m 0700 ${COMPOSE_MINT_KEY_DIR}`);
    expect(dockerfile).not.toMatch(/minted-demo-keys|mint-.*\.key/);
  });

  it('makes owner-only keys at the first start, silently, and keeps them at the next', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sg-mint-keys-'));
    try {
      const first = runScript(dir);
      expect([first.status, first.stdout, first.stderr]).toEqual([0, '', '']);
      const files = readdirSync(dir).sort();
      expect(files).toHaveLength(2);
      const contents = files.map((name) => readFileSync(join(dir, name), 'utf8'));
      for (const name of files) expect(statSync(join(dir, name)).mode & 0o777).toBe(0o600);
      const again = runScript(dir);
      expect([again.status, again.stdout, again.stderr]).toEqual([0, '', '']);
      expect(files.map((name) => readFileSync(join(dir, name), 'utf8'))).toEqual(contents);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("mints the spa-demo set's Algolia key and S3 upload URL from those keys, per user", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sg-mint-keys-'));
    try {
      expect(runScript(dir).status).toBe(0);
      const now = Math.floor(Date.now() / 1000);
      const user = (sub: string) => ({
        iss: 'http://localhost:8081',
        sub,
        clientId: 'spa-demo',
        scopes: ['secrets:read'],
        claims: {},
        exp: now + 3600,
        token: 'unused',
      });
      const mint = composeMint();
      expect(Object.keys(mint)).toEqual([...MINTED_DEMO_VALUES]);
      // Each of the file's entries, its key files read from where the script wrote them.
      const minterOf = (entry: MintEntry | undefined) =>
        createMinter(
          JSON.parse(
            JSON.stringify(entry).replaceAll(`${COMPOSE_MINT_KEY_DIR}/`, `${dir}/`),
          ) as MintEntry,
        );
      for (const [name, entry] of Object.entries(mint)) {
        const minter = minterOf(entry);
        const [ana, ben] = [
          await minter.mint(user('ana'), now),
          await minter.mint(user('ben'), now),
        ];
        expect(ana.expiresAt, name).toBe(now + 300);
        expect(ana.value, name).not.toBe(ben.value);
      }
      const upload = await minterOf(mint['avatar-upload-url']).mint(user('ana'), now);
      expect(upload.value).toMatch(
        /^http:\/\/127\.0\.0\.1:9000\/dev-uploads\/uploads\/ana\/avatar\.png\?X-Amz-Algorithm=AWS4-HMAC-SHA256&/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the NGINX image entrypoint', () => {
  /**
   * Runs nginx/docker/entrypoint.sh with a stand-in for the secret-set watcher (which publishes
   * SECRETS as the default set and then runs NGINX) that prints the SECRETS it was given.
   */
  function entrypoint(flat: string | undefined, extra: Record<string, string> = {}) {
    const work = mkdtempSync(join(tmpdir(), 'sg-entrypoint-'));
    try {
      const watcher = join(work, 'sg-secret-sets');
      writeFileSync(watcher, '#!/bin/sh\nprintf "SECRETS=[%s]" "${SECRETS:-}"\n');
      chmodSync(watcher, 0o755);
      const flatFile = join(work, 'flat-secrets');
      if (flat !== undefined) writeFileSync(flatFile, flat);
      const run = spawnSync('sh', [join(REPO_ROOT, 'nginx/docker/entrypoint.sh'), 'nginx'], {
        env: {
          // The stand-in watcher first; the image's /etc/nginx/bin is nginx/bin here.
          PATH: `${work}:${join(REPO_ROOT, 'nginx/bin')}:${process.env.PATH ?? ''}`,
          ...dockerNginxEnv(),
          NGINX_ENVSUBST_TEMPLATE_DIR: join(REPO_ROOT, 'nginx/templates'),
          NGINX_ENVSUBST_OUTPUT_DIR: join(work, 'out'),
          SG_SECRETS_FILE: join(REPO_ROOT, 'nginx/secrets.dev.json'),
          SG_POLICY_FILE: join(REPO_ROOT, 'stack/compose/verifier.json'),
          SG_FLAT_SECRETS_FILE: flatFile,
          ...extra,
        },
        encoding: 'utf8',
        timeout: 20_000,
      });
      return { status: run.status, stdout: run.stdout, stderr: run.stderr };
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }

  it('hands the mounted flat secrets file to the set watcher as SECRETS', () => {
    const run = entrypoint('{"x-api-key":"from-the-file"}\n');
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe('SECRETS=[{"x-api-key":"from-the-file"}]');
  });

  it.each([
    ['no file', undefined],
    ['an empty file (compose mounts /dev/null)', ''],
  ])('with %s, gives the set watcher no SECRETS (the secrets file is served)', (_title, flat) => {
    expect(entrypoint(flat).stdout).toBe('SECRETS=[]');
  });

  it('refuses both a SECRETS variable and a flat secrets file, naming no value', () => {
    const run = entrypoint('{"x-api-key":"from-the-file"}', { SECRETS: '{"x-api-key":"env"}' });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('SECRETS is set and');
    expect(run.stderr).not.toContain('from-the-file');
  });
});

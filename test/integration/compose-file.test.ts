// docker-compose.yaml cannot run on every machine, so it is held to the local runner here: the same
// services, ports, variable names and values (adjusted only for container addresses), health checks
// on the same endpoints, and the same verifier policy.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { dockerNginxEnv, localNginxEnv } from '../../stack/nginx/render.js';
import { REPO_ROOT } from '../../stack/start-stack.js';
import {
  DEFAULT_PORTS,
  SERVICE_NAMES,
  idpEnv,
  verifierConfig,
  verifierEnv,
} from '../../stack/service-env.js';

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string };
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
}

const compose = parse(readFileSync(join(REPO_ROOT, 'docker-compose.yaml'), 'utf8')) as {
  services: Record<string, ComposeService>;
};
const service = (name: string): ComposeService => {
  const found = compose.services[name];
  if (!found) throw new Error(`docker-compose.yaml has no "${name}" service`);
  return found;
};
const names = (env: object | undefined) => Object.keys(env ?? {}).sort();

/** The runner's variables for each service, built by the same functions startStack() uses. */
const runner = {
  idp: idpEnv({
    host: '127.0.0.1',
    port: DEFAULT_PORTS.idp,
    issuer: 'http://127.0.0.1:8081',
    audience: 'secret-gate-api',
  }),
  verifier: verifierEnv({ listen: '127.0.0.1:8090', configFile: '/tmp/verifier.json' }),
  nginx: localNginxEnv({ prefix: '/tmp/prefix' }),
};

describe('docker-compose.yaml mirrors the local runner', () => {
  it('defines exactly the runner services: idp, verifier, nginx', () => {
    expect(Object.keys(compose.services).sort()).toEqual([...SERVICE_NAMES].sort());
  });

  it.each(SERVICE_NAMES)('publishes %s on its default port, on loopback only', (name) => {
    const port = DEFAULT_PORTS[name];
    expect(service(name).ports).toEqual([`127.0.0.1:${port}:${port}`]);
  });

  it('runs NGINX from the official image with the templates, njs, SPA and secrets mounted', () => {
    const nginx = service('nginx');
    expect(nginx.image).toMatch(/^nginx:/);
    expect(nginx.environment).toMatchObject({
      NGINX_ENVSUBST_FILTER: '^SG_',
      NGINX_ENVSUBST_OUTPUT_DIR: '/etc/nginx',
    });
    const docker = dockerNginxEnv();
    expect(nginx.volumes).toEqual(
      expect.arrayContaining([
        './nginx/templates:/etc/nginx/templates:ro',
        `./nginx/njs:${docker.SG_NJS_DIR}:ro`,
        `./spa/dist:${docker.SG_SPA_ROOT}:ro`,
        `./nginx/secrets.dev.json:${docker.SG_SECRETS_FILE}:ro`,
      ]),
    );
  });

  it('gives NGINX every SG_ variable the runner sets, with the documented image values', () => {
    const env = service('nginx').environment ?? {};
    const sg = Object.fromEntries(Object.entries(env).filter(([name]) => name.startsWith('SG_')));
    expect(names(sg)).toEqual(names(runner.nginx));
    expect(sg).toEqual(dockerNginxEnv());
    expect(env).toHaveProperty('SECRETS');
  });

  it('gives the IdP and the verifier the variables the runner sets, with container addresses', () => {
    expect(names(service('idp').environment)).toEqual(names(runner.idp));
    expect(service('idp').environment).toMatchObject({
      ...runner.idp,
      IDP_HOST: '0.0.0.0',
      IDP_ISSUER: 'http://localhost:8081',
    });
    expect(names(service('verifier').environment)).toEqual(names(runner.verifier));
    expect(service('verifier').environment).toMatchObject({
      VERIFIER_LISTEN: '0.0.0.0:8090',
      VERIFIER_LOG_LEVEL: runner.verifier.VERIFIER_LOG_LEVEL,
    });
  });

  it('mounts a verifier config that is the runner policy for the compose addresses', () => {
    const verifier = service('verifier');
    const target = verifier.environment?.VERIFIER_CONFIG ?? '';
    const mount = verifier.volumes?.find((volume) => volume.split(':')[1] === target);
    expect(mount).toBeDefined();
    const file = JSON.parse(
      readFileSync(join(REPO_ROOT, (mount ?? '').split(':')[0] ?? ''), 'utf8'),
    ) as object;
    expect(file).toEqual(
      verifierConfig({
        issuer: 'http://localhost:8081',
        jwksUri: 'http://idp:8081/jwks',
        audience: 'secret-gate-api',
        // The dev IdP is reached by its service name over plain http: the explicit opt-in,
        // without which the verifier refuses to start.
        allowHttp: true,
      }),
    );
  });

  it.each([
    ['idp', 'http://127.0.0.1:8081/readyz'],
    ['nginx', 'http://127.0.0.1:8080/hello'],
  ])('health-checks %s on the endpoint the runner waits for (%s)', (name, url) => {
    expect(service(name).healthcheck?.test.join(' ')).toContain(url);
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

  it('builds the verifier and the IdP from their Dockerfiles', () => {
    expect(service('verifier').build).toEqual({ context: '.', dockerfile: 'verifier/Dockerfile' });
    expect(service('idp').build).toEqual({ context: '.', dockerfile: 'idp/Dockerfile' });
  });

  it.each(['verifier/Dockerfile', 'idp/Dockerfile', 'nginx/Dockerfile'])(
    '%s is multi-stage, non-root and health-checked',
    (path) => {
      const text = readFileSync(join(REPO_ROOT, path), 'utf8');
      expect(text.match(/^FROM /gm)?.length).toBeGreaterThan(1);
      expect(text).toMatch(/^USER (node|nginx)$/m);
      expect(text).toMatch(/^HEALTHCHECK /m);
      if (path !== 'nginx/Dockerfile') expect(text).toMatch(/^FROM node:20-bookworm/m);
    },
  );
});

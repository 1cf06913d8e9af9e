// What the three images promise on their own, proven on the built images with the plain docker CLI:
// they run as a non-root user on a read-only root filesystem (NGINX with a tmpfs on /tmp), their
// own HEALTHCHECK turns healthy, they end on `docker stop` by themselves without `--init`, the NGINX
// image is the same nginx 1.22.1 + njs 0.7.9 the local runner uses, and the verifier listens on
// loopback unless told otherwise. Everything it starts is removed in afterAll, even on failure.
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../stack/ports.js';
import { verifierConfig, type ServiceName } from '../../stack/service-env.js';
import { IMAGES, buildImages, docker, missingEngine } from './engine.js';

const fixtureKey = fileURLToPath(
  new URL('../fixtures/cloudfront/rsa-2048.pkcs8.pem', import.meta.url),
);
const noEngine = await missingEngine();
if (noEngine) console.warn(`image suite skipped: no container engine (${noEngine})`);

const suite = `images-${process.pid}`;
const label = `org.secret-gate.suite=${suite}`;
const network = `sg-${suite}`;
let files = '';
const names: Record<ServiceName | 'loopbackVerifier', string> = {
  idp: `${suite}-idp`,
  verifier: `${suite}-verifier`,
  nginx: `${suite}-nginx`,
  loopbackVerifier: `${suite}-verifier-lo`,
};
let loopbackPort = 0;

/** `docker run -d` hardened as compose runs the images, but without `--init`. */
function run(name: string, image: string, ...options: string[]): Promise<string> {
  return docker(
    'run',
    '-d',
    '--name',
    name,
    '--label',
    label,
    '--network',
    network,
    '--read-only',
    '--cap-drop',
    'ALL',
    '--security-opt',
    'no-new-privileges:true',
    ...options,
    image,
  );
}

async function healthOf(name: string): Promise<string> {
  return docker('inspect', '--format', '{{.State.Health.Status}}', name);
}

async function waitHealthy(name: string): Promise<string> {
  let status = await healthOf(name);
  for (let i = 0; i < 60 && status !== 'healthy' && status !== 'unhealthy'; i++) {
    await sleep(500);
    status = await healthOf(name);
  }
  return status;
}

describe.skipIf(noEngine !== undefined)(
  `the images${noEngine ? ` (skipped: no container engine: ${noEngine})` : ''}`,
  () => {
    beforeAll(async () => {
      await buildImages();
      files = mkdtempSync(join(tmpdir(), 'sg-images-'));
      chmodSync(files, 0o755);
      const issuer = `http://${names.idp}:8081`;
      writeFileSync(
        join(files, 'verifier.json'),
        JSON.stringify(
          // The IdP container is reached by name over plain http: the issuer opts in.
          verifierConfig({
            issuer,
            jwksUri: `${issuer}/jwks`,
            audience: 'secret-gate-api',
            allowHttp: true,
          }),
        ),
        { mode: 0o644 },
      );
      writeFileSync(join(files, 'secrets.json'), '{"default":{}}', { mode: 0o644 });
      loopbackPort = await freePort();
      await docker('network', 'create', '--label', label, network);
      const mount = `${files}:/etc/secret-gate/files:ro`;
      await run(names.idp, IMAGES.idp, '-e', `IDP_ISSUER=${issuer}`);
      await run(
        names.verifier,
        IMAGES.verifier,
        '-v',
        mount,
        '-e',
        'VERIFIER_LISTEN=0.0.0.0:8090',
        '-e',
        'VERIFIER_CONFIG=/etc/secret-gate/files/verifier.json',
      );
      await run(
        names.loopbackVerifier,
        IMAGES.verifier,
        '-v',
        mount,
        '-p',
        `127.0.0.1:${loopbackPort}:8090`,
        '-e',
        'VERIFIER_CONFIG=/etc/secret-gate/files/verifier.json',
      );
      await run(
        names.nginx,
        IMAGES.nginx,
        '-v',
        mount,
        '--tmpfs',
        '/tmp',
        '-e',
        `SG_VERIFIER_ADDR=${names.verifier}:8090`,
        '-e',
        'SG_SECRETS_FILE=/etc/secret-gate/files/secrets.json',
      );
    }, 600_000);

    afterAll(async () => {
      const ids = (await docker('ps', '-aq', '--filter', `label=${label}`))
        .split('\n')
        .filter(Boolean);
      if (ids.length > 0) await docker('rm', '-f', '-v', ...ids);
      await docker('network', 'rm', network).catch(() => undefined);
      if (files) rmSync(files, { recursive: true, force: true });
    }, 60_000);

    it.each(Object.entries(IMAGES))('%s runs as a non-root user', async (_, image) => {
      expect(await docker('image', 'inspect', '--format', '{{.Config.User}}', image)).toMatch(
        /^(node|nginx)$/,
      );
      expect(await docker('run', '--rm', '--read-only', image, 'id', '-u')).not.toBe('0');
    });

    it('every image becomes healthy by its own HEALTHCHECK on a read-only root filesystem', async () => {
      const health: Record<string, string> = {};
      for (const name of Object.values(names)) health[name] = await waitHealthy(name);
      expect(health).toEqual(Object.fromEntries(Object.values(names).map((n) => [n, 'healthy'])));
      for (const name of Object.values(names)) {
        expect(await docker('inspect', '--format', '{{.HostConfig.ReadonlyRootfs}}', name)).toBe(
          'true',
        );
      }
    });

    it('the verifier listens on loopback by default: healthy inside, nothing on its published port', async () => {
      expect(await waitHealthy(names.loopbackVerifier)).toBe('healthy');
      const reached = await fetch(`http://127.0.0.1:${loopbackPort}/readyz`, {
        signal: AbortSignal.timeout(3_000),
      }).then(
        (response) => response.status,
        () => 'unreachable',
      );
      expect(reached).toBe('unreachable');
    });

    it('the verifier image signs CloudFront cookies with the signer package and carries no cf-sign', async () => {
      const cloudFront = {
        keyPairId: 'K2JCJMDEHXQW5F',
        privateKeyFile: '/etc/secret-gate/files/cloudfront.pem',
        algorithm: 'RSA-SHA256',
        resource: 'https://cdn.example.test/private/*',
        ttlSeconds: 300,
      };
      const config = verifierConfig({
        issuer: 'https://idp.example.test',
        jwksUri: 'https://idp.example.test/jwks',
        audience: 'secret-gate-api',
      }) as { policies: { secret: Record<string, unknown> } };
      config.policies.secret.cloudfront = cloudFront;
      writeFileSync(join(files, 'cloudfront.json'), JSON.stringify(config), { mode: 0o644 });
      copyFileSync(fixtureKey, join(files, 'cloudfront.pem'));
      chmodSync(join(files, 'cloudfront.pem'), 0o644);
      // The signer as the grant uses it, run inside the image on the mounted key.
      const sign = [
        "const { createCloudFrontSigner } = await import('@secret-gate/cloudfront-signer');",
        "const privateKey = (await import('node:fs')).readFileSync(process.env.KEY, 'utf8');",
        "const signer = await createCloudFrontSigner({ keyPairId: 'K2JCJMDEHXQW5F', privateKey, algorithm: 'RSA-SHA256' });",
        'const expires = Math.floor(Date.now() / 1000) + 60;',
        "const { cookies } = await signer.signCookies({ resource: 'https://cdn.example.test/private/*', expires });",
        "console.log(Object.keys(cookies).join(' '));",
      ].join('\n');
      const output = await docker(
        'run',
        '--rm',
        '--read-only',
        '-v',
        `${files}:/etc/secret-gate/files:ro`,
        '-e',
        'VERIFIER_CONFIG=/etc/secret-gate/files/cloudfront.json',
        '-e',
        `KEY=${cloudFront.privateKeyFile}`,
        '-e',
        `SIGN=${sign}`,
        '--entrypoint',
        'sh',
        IMAGES.verifier,
        '-c',
        'node verifier/dist/main.js --check-config >/dev/null && node --input-type=module -e "$SIGN"' +
          ' && { find / -xdev \\( -name "cf-sign*" -o -name "cli-args*" \\) -print 2>/dev/null || true; };' +
          ' ls -d packages/cloudfront-signer/dist/cli node_modules/.bin/cf-sign 2>&1 || true',
      );
      // The key passed --check-config, the package signed, and no cf-sign file is anywhere.
      expect(output.split('\n')).toEqual([
        'CloudFront-Policy CloudFront-Signature CloudFront-Key-Pair-Id CloudFront-Hash-Algorithm',
        expect.stringMatching(/dist\/cli.*No such file or directory/),
        expect.stringMatching(/\.bin\/cf-sign.*No such file or directory/),
      ]);
    });

    it('the verifier and IdP images run Node 24 LTS; the verifier keeps only its recorded uWS addon', async () => {
      for (const image of [IMAGES.verifier, IMAGES.idp])
        expect(await docker('run', '--rm', image, 'node', '--version'), image).toMatch(/^v24\./);
      const kept = await docker(
        'run',
        '--rm',
        IMAGES.verifier,
        'sh',
        '-c',
        'ls node_modules/uWebSockets.js | grep "\\.node$"',
      );
      const recorded = JSON.parse(
        readFileSync(new URL('../../verifier/uws-addons.json', import.meta.url), 'utf8'),
      ) as { addons: Record<string, { sha256: string }> };
      expect(kept).toMatch(/^uws_linux_(x64|arm64)_137\.node$/);
      expect(Object.keys(recorded.addons)).toContain(kept);
    });

    it('the verifier refuses to start on an addon that differs from the recorded one, naming the file and both hashes', async () => {
      const started = spawnSync(
        'docker',
        [
          'run',
          '--rm',
          '--user',
          'root',
          '-e',
          'VERIFIER_ISSUER=https://idp.test',
          '-e',
          'VERIFIER_AUDIENCE=api',
          IMAGES.verifier,
          'sh',
          '-c',
          'for f in node_modules/uWebSockets.js/uws_*.node; do printf x >> "$f"; done; exec node verifier/dist/main.js',
        ],
        { encoding: 'utf8', timeout: 60_000 },
      );
      expect(started.status).toBe(1);
      expect(started.stderr).toMatch(
        /^verifier failed to start: uWebSockets\.js addon \/app\/node_modules\/uWebSockets\.js\/uws_linux_\w+_137\.node: sha256 [0-9a-f]{64} differs from the recorded [0-9a-f]{64} \(verifier\/uws-addons\.json\)$/m,
      );
    });

    it('the NGINX image is the nginx 1.22.1 + njs 0.7.9 of the local runner', async () => {
      const version = await docker(
        'run',
        '--rm',
        '--entrypoint',
        'sh',
        IMAGES.nginx,
        '-c',
        'nginx -v 2>&1',
      );
      expect(version).toBe('nginx version: nginx/1.22.1');
      const local = spawnSync('nginx', ['-v'], { encoding: 'utf8' });
      if (local.status === 0) expect(local.stderr.trim()).toBe(version);
      const packages = await docker(
        'run',
        '--rm',
        '--entrypoint',
        'dpkg-query',
        IMAGES.nginx,
        '-W',
        '-f',
        '${Package} ${Version}\\n',
        'nginx',
        'libnginx-mod-http-js',
      );
      expect(packages).toMatch(/^nginx 1\.22\.1-/m);
      expect(packages).toMatch(/^libnginx-mod-http-js 0\.7\.9-/m);
    });

    it('NGINX refuses to start, naming each problem, on a value with a quote or no secrets file', async () => {
      const started = spawnSync(
        'docker',
        ['run', '--rm', '--read-only', '--tmpfs', '/tmp', '-e', 'SG_CSP_IMG_SRC=a"b', IMAGES.nginx],
        { encoding: 'utf8', timeout: 30_000 },
      );
      expect(started.status).toBe(1);
      expect(started.stderr).toContain(
        'NGINX variables must not contain quotes or line breaks: SG_CSP_IMG_SRC',
      );
      expect(started.stderr).toContain(
        'SG_SECRETS_FILE "/etc/secret-gate/secrets.json" cannot be read',
      );
    });

    // How long a stop takes is a figure of `npm run bench:rotation` (its stop-time row); here the
    // behaviour: each image ends on SIGTERM by itself (exit 0), never by the SIGKILL that follows
    // the grace period (exit 137).
    it('ends on `docker stop` by itself, each image as PID 1 without --init', async () => {
      const exits: Record<string, string> = {};
      for (const name of Object.values(names)) {
        await docker('stop', '-t', '30', name);
        exits[name] = await docker('inspect', '--format', '{{.State.ExitCode}}', name);
      }
      expect(exits).toEqual(Object.fromEntries(Object.values(names).map((n) => [n, '0'])));
    });
  },
);

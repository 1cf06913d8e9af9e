// What a start loads is memory held for the process's life (docs/performance.md, "Peak RSS with
// 100,000 decisions"): the libraries of features a configuration does not use stay unloaded.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));

/** The node_modules package a resolved URL lies in, as the child scripts below read it. */
const PACKAGE_OF = String.raw`/node_modules\/((?:@[^/]+\/)?[^/]+)\//`;

/** The packages under node_modules a fresh process resolves while it builds a service. */
function packagesLoadedBy(env: Record<string, string>): string[] {
  const script = `
    import { registerHooks } from 'node:module';
    const urls = new Set();
    registerHooks({ resolve(specifier, context, next) {
      const result = next(specifier, context);
      urls.add(result.url);
      return result;
    } });
    const { loadConfig } = await import('./verifier/src/config/load.ts');
    const { createVerifierService } = await import('./verifier/src/service.ts');
    const { createLogger } = await import('./verifier/src/log.ts');
    createVerifierService(loadConfig(${JSON.stringify(env)}), {
      logger: createLogger('silent'),
      defaultMetrics: false,
    });
    const names = [...urls].flatMap((url) => ${PACKAGE_OF}.exec(url)?.[1] ?? []);
    process.stdout.write(JSON.stringify([...new Set(names)]));
  `;
  const run = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--input-type=module', '-e', script],
    {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 30_000,
    },
  );
  expect(run.stderr).toBe('');
  return JSON.parse(run.stdout) as string[];
}

it('a verifier without Redis, token-exchange or S3 values never loads ioredis, oauth4webapi or aws4', () => {
  const loaded = packagesLoadedBy({
    VERIFIER_ISSUER: 'https://issuer.test',
    VERIFIER_AUDIENCE: 'api',
    VERIFIER_JWKS_URI: 'http://127.0.0.1:9/jwks',
  });
  // What the service does need is seen, so an absence means something.
  expect(loaded).toEqual(expect.arrayContaining(['jose', 'lru-cache', 'zod']));
  expect(loaded).not.toContain('ioredis');
  expect(loaded).not.toContain('oauth4webapi');
  expect(loaded).not.toContain('aws4');
});

/**
 * The packages the verifier process (main.ts, where tracing is switched on) has resolved by the
 * time it has listened and tried its key sets, told on its way out after SIGTERM.
 */
async function packagesLoadedByMain(env: Record<string, string>): Promise<string[]> {
  const hook = `
    import { registerHooks } from 'node:module';
    import { writeSync } from 'node:fs';
    const names = new Set();
    registerHooks({ resolve(specifier, context, next) {
      const result = next(specifier, context);
      const name = ${PACKAGE_OF}.exec(result.url)?.[1];
      if (name) names.add(name);
      return result;
    } });
    process.on('exit', () => writeSync(2, 'loaded ' + JSON.stringify([...names]) + '\\n'));
  `;
  const dir = mkdtempSync(join(tmpdir(), 'verifier-modules-'));
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--import', `data:text/javascript,${encodeURIComponent(hook)}`, MAIN],
    {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        VERIFIER_ISSUER: 'https://issuer.test',
        VERIFIER_AUDIENCE: 'api',
        VERIFIER_JWKS_URI: 'http://127.0.0.1:9/jwks',
        VERIFIER_LISTEN: `unix:${join(dir, 'verifier.sock')}`,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise((resolve) => child.on('exit', resolve));
  // After `verifier listening`, the start's line on its key sets (loaded or not): by then the
  // service is built and every module a start loads is loaded.
  await new Promise<void>((resolve) =>
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.includes('key sets')) resolve();
    }),
  );
  child.kill('SIGTERM');
  await exited;
  rmSync(dir, { recursive: true, force: true });
  const line = /^loaded (.*)$/m.exec(stderr);
  if (line === null) throw new Error(`the verifier told no modules: ${stderr}`);
  return JSON.parse(line[1]!) as string[];
}

it('a verifier started without OTEL_* variables loads no OpenTelemetry SDK package', async () => {
  // The API alone comes with prom-client (its process CPU metric reads the active span for
  // exemplars), traced or not; everything tracing adds is the SDK.
  const isSdk = (name: string) =>
    name.startsWith('@opentelemetry/') && name !== '@opentelemetry/api';
  expect((await packagesLoadedByMain({})).filter(isSdk)).toEqual([]);
  // Named an OTLP endpoint, the same start loads the SDK: so the check above can see it.
  const traced = await packagesLoadedByMain({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
  expect(traced).toEqual(
    expect.arrayContaining(['@opentelemetry/sdk-trace-node', '@opentelemetry/resources']),
  );
}, 60_000);

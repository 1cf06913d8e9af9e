// What a start loads is memory held for the process's life (docs/performance.md, "Peak RSS with
// 100,000 decisions"): the libraries of features a configuration does not use stay unloaded.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

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
    const names = [...urls].flatMap((url) => /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(url)?.[1] ?? []);
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

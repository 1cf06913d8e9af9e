import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { startJwksServer } from './testing/fixtures.js';
import { buildService } from './testing/service.js';

const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));

/** Runs the verifier process from source; resolves with its exit code and output. */
function run(
  env: Record<string, string>,
  args: string[] = [],
  whileRunning?: (child: ReturnType<typeof spawn>) => Promise<void>,
) {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return (async () => {
    if (whileRunning) await whileRunning(child);
    const code = await exited;
    return { code, stdout, stderr };
  })();
}

/** A loopback port the kernel just handed out and that is free again. */
async function releasedPort(): Promise<number> {
  const { service } = buildService({
    VERIFIER_ISSUER: 'https://idp.test',
    VERIFIER_AUDIENCE: 'api',
  });
  const { port } = await service.listen({ kind: 'tcp', host: '127.0.0.1', port: 0 });
  await service.stop(0);
  return port;
}

async function waitFor(url: string): Promise<Response> {
  for (let attempt = 0; attempt < 200; attempt++) {
    try {
      return await fetch(url);
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  throw new Error(`${url} never answered`);
}

describe('the verifier process', { timeout: 90_000 }, () => {
  it('--check-config reports every problem and exits 2', async () => {
    const { code, stderr } = await run(
      {
        VERIFIER_ISSUER: 'https://idp.test',
        VERIFIER_ALGORITHMS: 'HS256',
        VERIFIER_LISTEN: 'nowhere',
        VERIFIER_BOGUS: '1',
      },
      ['--check-config'],
    );
    expect(code).toBe(2);
    expect(stderr).toContain('VERIFIER_BOGUS: unknown variable');
    expect(stderr).toContain('VERIFIER_AUDIENCE: required');
    expect(stderr).toContain('VERIFIER_ALGORITHMS: "HS256" is not allowed');
    expect(stderr).toContain('VERIFIER_LISTEN: expected host:port');
  });

  it('--check-config accepts a good configuration and exits 0 without listening', async () => {
    const { code, stdout } = await run(
      { VERIFIER_ISSUER: 'https://idp.test', VERIFIER_AUDIENCE: 'api' },
      ['--check-config'],
    );
    expect(code).toBe(0);
    expect(stdout).toContain('configuration ok');
  });

  it('--make-edge-key writes a key the configuration then reads, once, and never prints it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'verifier-edge-key-'));
    const env = {
      VERIFIER_ISSUER: 'https://idp.test',
      VERIFIER_AUDIENCE: 'api',
      VERIFIER_EDGE_KEY_FILE: join(dir, 'edge-key'),
    };
    const first = await run(env, ['--make-edge-key', '--check-config']);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('configuration ok');
    const key = readFileSync(join(dir, 'edge-key'), 'utf8').trim();
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    const again = await run(env, ['--make-edge-key', '--check-config']);
    expect(again.code).toBe(0);
    expect(readFileSync(join(dir, 'edge-key'), 'utf8').trim()).toBe(key);
    for (const output of [first.stdout, first.stderr, again.stdout, again.stderr])
      expect(output).not.toContain(key);
    const { VERIFIER_EDGE_KEY_FILE: _file, ...unset } = env;
    const refused = await run(unset, ['--make-edge-key']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('set VERIFIER_EDGE_KEY_FILE to an absolute path');
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves, becomes ready, and exits 0 promptly on SIGTERM', async () => {
    const jwks = await startJwksServer(['rsaA']);
    const port = await releasedPort();
    const { code, stdout } = await run(
      {
        VERIFIER_ISSUER: 'https://idp.test',
        VERIFIER_AUDIENCE: 'api',
        VERIFIER_JWKS_URI: jwks.url,
        VERIFIER_LISTEN: `127.0.0.1:${port}`,
      },
      [],
      async (child) => {
        expect((await waitFor(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
        await expect
          .poll(async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status)
          .toBe(200);
        child.kill('SIGTERM');
      },
    );
    expect(code).toBe(0);
    expect(stdout).toContain('"msg":"stopped"');
    await jwks.close();
  });
});

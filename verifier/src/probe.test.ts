import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildService } from './testing/service.js';

const PROBE = fileURLToPath(new URL('./probe.ts', import.meta.url));

/**
 * Runs the probe as the image runs it: a separate process that only has VERIFIER_LISTEN. Async,
 * since the verifier it asks runs in this test's own event loop.
 */
function probe(
  listen: string | undefined,
  path?: string,
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', PROBE, ...(path ? [path] : [])],
      { env: { PATH: process.env.PATH ?? '', ...(listen ? { VERIFIER_LISTEN: listen } : {}) } },
      (error, _stdout, stderr) => resolve({ code: error ? (error.code as number) : 0, stderr }),
    );
  });
}

describe('the health probe follows VERIFIER_LISTEN', () => {
  // A tokeninfo issuer needs no key set (and is never called here): ready as soon as it listens.
  const built = () =>
    buildService(
      {},
      {
        file: {
          issuers: [
            { type: 'tokeninfo', preset: 'google', issuer: 'https://idp.test', audience: 'spa' },
          ],
          policies: { default: { issuers: ['https://idp.test'] } },
        },
      },
    ).service;
  const tcp = built();
  const unix = built();
  const socketPath = join(mkdtempSync(join(tmpdir(), 'probe-')), 'v.sock');
  let port: number;

  beforeAll(async () => {
    ({ port } = await tcp.listen({ kind: 'tcp', host: '0.0.0.0', port: 0 }));
    await unix.listen({ kind: 'unix', path: socketPath });
  });
  afterAll(async () => {
    await Promise.all([tcp.stop(0), unix.stop(0)]);
  });

  it('asks a wildcard TCP listener over loopback', async () => {
    expect(await probe(`0.0.0.0:${port}`)).toEqual({ code: 0, stderr: '' });
    expect((await probe(`127.0.0.1:${port}`, '/healthz')).code).toBe(0);
  });

  it('asks over the unix socket when the verifier listens on one', async () => {
    expect((await probe(`unix:${socketPath}`)).code).toBe(0);
    expect((await probe(`unix:${socketPath}`, '/healthz')).code).toBe(0);
  });

  it('fails when nothing answers, and refuses paths other than the two probes', async () => {
    // A port that was just bound and released: nothing listens there.
    const gone = built();
    const { port: free } = await gone.listen({ kind: 'tcp', host: '127.0.0.1', port: 0 });
    await gone.stop(0);
    const closed = await probe(`127.0.0.1:${free}`);
    expect(closed.code).toBe(1);
    expect(closed.stderr).toContain('/readyz: connect ECONNREFUSED');
    expect((await probe(`unix:${socketPath}`, '/verify')).code).toBe(2);
    expect((await probe('not an address')).stderr).toContain('VERIFIER_LISTEN: expected host:port');
  });
});

/** Every module probe.ts loads: its own files (followed, relative to it) and the packages named. */
function probeImports(): { files: string[]; packages: string[] } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    const source = readFileSync(file, 'utf8');
    for (const [, specifier = ''] of source.matchAll(
      /^\s*(?:import|export)\b[^'"]*['"]([^'"]+)['"]/gm,
    )) {
      if (specifier.startsWith('.'))
        visit(resolve(dirname(file), specifier.replace(/\.js$/, '.ts')));
      else packages.add(specifier);
    }
  };
  visit(PROBE);
  return {
    files: [...files].map((file) => relative(dirname(PROBE), file)),
    packages: [...packages],
  };
}

describe('the health probe stays small', () => {
  it('loads no CloudFront, token or decision code: the 5-second HEALTHCHECK reads the listen address only', () => {
    const { files, packages } = probeImports();
    expect(files.length, 'the walk follows the imports').toBeGreaterThan(1);
    expect(
      files.filter((file) => /^(cloudfront|token|decision|http|dpop|revocation)\//.test(file)),
    ).toEqual([]);
    expect(packages.filter((name) => name.includes('cloudfront'))).toEqual([]);
  });
});

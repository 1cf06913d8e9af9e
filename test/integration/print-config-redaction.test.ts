// The built verifier's `--print-config` and `--check-config` (issue 38, item 3): the edge key
// file's content and the userinfo of single, Sentinel and Cluster store URLs are `[redacted]`,
// never printed, whatever setting names them.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../stack/stack.js';

const dir = mkdtempSync(join(tmpdir(), 'sg-redaction-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const EDGE_KEY = `edge-${'k'.repeat(40)}`;
const EDGE_KEY_FILE = join(dir, 'edge-key');
writeFileSync(EDGE_KEY_FILE, `${EDGE_KEY}\n`, { mode: 0o600 });

function verifier(flag: string, url: string) {
  return spawnSync(process.execPath, [join(REPO_ROOT, 'verifier/dist/main.js'), flag], {
    env: {
      PATH: process.env.PATH,
      VERIFIER_ISSUER: 'https://idp.example.test',
      VERIFIER_AUDIENCE: 'api',
      VERIFIER_EDGE_KEY_FILE: EDGE_KEY_FILE,
      VERIFIER_REDIS_URL: url,
    },
    encoding: 'utf8',
    timeout: 20_000,
  });
}

describe('the built verifier prints no credential', () => {
  it.each([
    ['a single host', 'rediss://gate:single-pass@cache.example.test:6380'],
    ['a Sentinel', 'rediss+sentinel://:sentinel-pass@h1:26379,h2:26379/gate'],
    ['a Cluster', 'rediss+cluster://gate:cluster-pass@h1:6379,h2:6379'],
  ])('with %s store URL, in --print-config and --check-config', (_, url) => {
    const password = /:([a-z]+-pass)@/.exec(url)?.[1] ?? '';
    const printed = verifier('--print-config', url);
    expect(printed.status).toBe(0);
    const config = JSON.parse(printed.stdout) as { edgeKeyFile: string; redis: { url: string } };
    expect(config.edgeKeyFile).toBe('[redacted]');
    expect(config.redis.url).toContain('://[redacted]@');
    expect(JSON.parse(printed.stdout)).toMatchObject({
      $sources: {
        'redis.url': 'env VERIFIER_REDIS_URL',
        edgeKeyFile: 'env VERIFIER_EDGE_KEY_FILE',
      },
    });
    const checked = verifier('--check-config', url);
    expect(checked.status).toBe(0);
    // The start's warning, said by the check too (the default listener is TCP, here with a key).
    expect(checked.stdout).not.toContain('warning:');
    for (const output of [printed.stdout, printed.stderr, checked.stdout, checked.stderr]) {
      expect(output).not.toContain(EDGE_KEY);
      expect(output).not.toContain(password);
    }
  });

  it('--check-config says the warning the start would log', () => {
    const run = spawnSync(
      process.execPath,
      [join(REPO_ROOT, 'verifier/dist/main.js'), '--check-config'],
      {
        env: {
          PATH: process.env.PATH,
          VERIFIER_ISSUER: 'https://idp.example.test',
          VERIFIER_AUDIENCE: 'api',
        },
        encoding: 'utf8',
        timeout: 20_000,
      },
    );
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('warning: listening on TCP without VERIFIER_EDGE_KEY_FILE');
  });

  it('and none in the error a bad store URL gives', () => {
    const run = verifier('--check-config', 'redis+sentinel://:sentinel-pass@h1:26379,h2:26379');
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('VERIFIER_REDIS_URL');
    expect(run.stderr).not.toContain('sentinel-pass');
  });
});

// The runner's side of a policy file change: checked before anything is written, published to the
// verifier, and NGINX reloaded only when the names it knows changed.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { watchPolicyFile, type PolicyReloadParts } from './policy-reload.js';
import type { PolicyFacts } from './verifier-check.js';
import { SettingsError } from './verifier-settings.js';

let dir: string;
let path: string;
let watch: ReturnType<typeof watchPolicyFile> | undefined;
const PACE = { poll: 1, settle: 0.2 };
const FACTS: PolicyFacts = {
  setNames: ['payments'],
  dpopRequired: false,
  receivers: [],
  pace: PACE,
};

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sg-policy-watch-'));
  path = join(dir, 'policies.json');
  writeFileSync(path, '{"policies":{}}');
});
afterEach(() => {
  watch?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A watcher whose merge is the file's text and whose check says the sets the text names. */
async function start(verdict: 'applied' | 'refused' = 'applied') {
  const seen = { published: [] as string[], nginx: [] as PolicyFacts[], log: [] as string[] };
  const parts: PolicyReloadParts = {
    path,
    facts: FACTS,
    published: '{"policies":{}}',
    pollMs: 60_000,
    log: (line) => seen.log.push(line),
    merge: () => {
      const text = readFileSync(path, 'utf8');
      try {
        JSON.parse(text);
      } catch {
        throw new SettingsError([`${path}: not valid JSON`]);
      }
      return text;
    },
    check: (text) => ({
      setNames: Object.keys((JSON.parse(text) as { policies: object }).policies),
      dpopRequired: false,
      receivers: [],
      pace: PACE,
    }),
    publish: (text) => {
      seen.published.push(text);
      return Promise.resolve(verdict);
    },
    reloadNginx: (facts) => {
      seen.nginx.push(facts);
      return Promise.resolve();
    },
  };
  watch = watchPolicyFile(parts);
  return Promise.resolve(seen);
}

describe('watchPolicyFile', () => {
  it('refuses a file that fails a check: one line per problem, nothing published', async () => {
    const seen = await start();
    writeFileSync(path, '{ "policies": ');
    await watch!.check();
    expect(seen.published).toEqual([]);
    expect(seen.log).toEqual([
      `policy file change refused: ${path}: not valid JSON`,
      'policy file change refused; the running policies are kept',
    ]);
  });

  it('publishes a valid change and reloads NGINX only when the set names change', async () => {
    const seen = await start();
    writeFileSync(path, '{"policies":{"payments":{}}}');
    await watch!.check();
    expect(seen.published).toHaveLength(1);
    expect(seen.nginx).toEqual([]);
    writeFileSync(path, '{"policies":{"payments":{},"audit":{}}}');
    await watch!.check();
    expect(seen.nginx).toEqual([
      { setNames: ['payments', 'audit'], dpopRequired: false, receivers: [], pace: PACE },
    ]);
  });

  it('leaves NGINX alone when the verifier refuses the change', async () => {
    const seen = await start('refused');
    writeFileSync(path, '{"policies":{"audit":{}}}');
    await watch!.check();
    expect(seen.published).toHaveLength(1);
    expect(seen.nginx).toEqual([]);
    expect(seen.log.at(-1)).toContain('the verifier refused the policy file change');
  });
});

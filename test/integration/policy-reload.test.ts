// Policies change without a restart, through real NGINX, the real verifier and the dev IdP: the
// runner follows the operator's policy file (`npm start -- --config FILE`) and the verifier its
// own file (how compose and Kubernetes run it). A stricter file is enforced within the documented
// bound, a broken one leaves the running answers and is counted, a looser one (with a new named
// set, which NGINX learns by a graceful reload) is served; the metrics name the live file.
import { readFileSync, mkdtempSync, rmSync, writeFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../../stack/start-stack.js';
import { configDigest } from '../../verifier/src/reloader.js';

const secrets = {
  default: { 'x-api-key': 'reload-default' },
  clients: {},
  policies: { payments: { default: { 'payments-key': 'reload-payments' }, clients: {} } },
};
/** The secrets file with the `audit` set, given before the policy that serves it. */
const WITH_AUDIT = {
  ...secrets,
  policies: {
    ...secrets.policies,
    audit: { default: { 'audit-key': 'reload-audit' }, clients: {} },
  },
};
const secret = (clients: string[]) => ({ scopes: ['secrets:read'], clients });
const V1 = {
  policies: { secret: secret(['spa-demo', 'partner-app']), payments: secret(['spa-demo']) },
};
const STRICTER = { policies: { secret: secret(['spa-demo']), payments: secret(['spa-demo']) } };
const LOOSER = {
  policies: {
    secret: secret(['spa-demo', 'partner-app']),
    payments: secret(['spa-demo']),
    audit: secret(['partner-app']),
  },
};
/**
 * The documented bound under `npm start` (docs/configuration.md): the runner's and the verifier's
 * poll (1 s each) and settle reads (0.2 s each), plus the edge cache's TTL (1 s here); with room
 * for a loaded machine.
 */
const BOUND_MS = 3_400 + 4_000;

let dir: string;
let policyFile: string;
let secretsFile: string;
let stack: Stack;
const runnerLog: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sg-policy-reload-'));
  secretsFile = join(dir, 'secrets.json');
  writeFileSync(secretsFile, JSON.stringify(secrets), { mode: 0o644 });
  policyFile = join(dir, 'policies.json');
  writeFileSync(policyFile, JSON.stringify(V1));
  stack = await startStack({
    secretsFile,
    policyFile,
    verifierVariables: { VERIFIER_EDGE_CACHE_TTL: '1s' },
    log: (line) => runnerLog.push(line),
  });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Replaced as an editor or a config-management tool does: written beside, renamed over. */
function replace(path: string, content: unknown) {
  writeFileSync(`${path}.tmp`, typeof content === 'string' ? content : JSON.stringify(content));
  renameSync(`${path}.tmp`, path);
}
const get = async (path: string, token: string) =>
  (await fetch(`${stack.urls.gate}${path}`, { headers: { authorization: `Bearer ${token}` } }))
    .status;
async function metrics(): Promise<string> {
  const keyFile = stack.env.verifier.VERIFIER_EDGE_KEY_FILE;
  const key: Record<string, string> =
    keyFile === undefined ? {} : { 'x-sg-edge-key': readFileSync(keyFile, 'utf8') };
  return (await fetch(`${stack.urls.verifier}/metrics`, { headers: key })).text();
}
/** Asks until `path` answers `status`; the milliseconds it took. */
async function until(path: string, token: string, status: number): Promise<number> {
  const start = Date.now();
  while (Date.now() - start < BOUND_MS) {
    if ((await get(path, token)) === status) return Date.now() - start;
    await sleep(100);
  }
  throw new Error(`${path} did not answer ${status} within ${BOUND_MS} ms`);
}
const liveDigest = () => configDigest(readFileSync(stack.files.verifierConfig, 'utf8'));

describe('a policy file replaced while the gate runs', () => {
  it('enforces a stricter file within the bound, and the metric names the new version', async () => {
    const partner = await stack.mintToken({ clientId: 'partner-app' });
    const spa = await stack.mintToken({ clientId: 'spa-demo' });
    expect(await get('/secret', partner)).toBe(200);
    replace(policyFile, STRICTER);
    await until('/secret', partner, 403);
    expect(await get('/secret', spa)).toBe(200);
    const text = await metrics();
    expect(text).toContain(`verifier_config_info{generation="2",digest="${liveDigest()}"} 1`);
  });

  it('keeps the running policies when the file is broken, and says so', async () => {
    const partner = await stack.mintToken({ clientId: 'partner-app' });
    replace(policyFile, '{ "policies": { "secret": ');
    const start = Date.now();
    while (!runnerLog.some((line) => line.includes('change refused; the running policies'))) {
      expect(Date.now() - start).toBeLessThan(BOUND_MS);
      await sleep(100);
    }
    expect(runnerLog.join('\n')).toMatch(/policy file change refused: .*not valid JSON/);
    expect(await get('/secret', partner)).toBe(403);
    expect(await get('/secret', await stack.mintToken({ clientId: 'spa-demo' }))).toBe(200);
  });

  it("counts the verifier's refusal of a change only a restart applies", async () => {
    replace(policyFile, { ...STRICTER, cache: { maxEntries: 5000 } });
    const start = Date.now();
    while (!(await metrics()).includes('verifier_config_reloads_total{outcome="refused"} 1')) {
      expect(Date.now() - start).toBeLessThan(BOUND_MS);
      await sleep(200);
    }
    expect(await get('/secret', await stack.mintToken({ clientId: 'partner-app' }))).toBe(403);
    expect(await metrics()).toContain('verifier_config_info{generation="2"');
  });

  it('serves a looser file and its new named set, which NGINX learns without a restart', async () => {
    const partner = await stack.mintToken({ clientId: 'partner-app' });
    expect(await get('/secret/audit', partner)).toBe(404);
    replace(secretsFile, WITH_AUDIT);
    replace(policyFile, LOOSER);
    await until('/secret/audit', partner, 200);
    expect(
      await (
        await fetch(`${stack.urls.gate}/secret/audit`, {
          headers: { authorization: `Bearer ${partner}` },
        })
      ).text(),
    ).toContain('reload-audit');
    expect(await get('/secret', partner)).toBe(200);
    expect(await metrics()).toContain(`digest="${liveDigest()}"`);
    const config = (await (await fetch(`${stack.urls.gate}/config.json`)).json()) as {
      secretSets: string;
    };
    expect(config.secretSets).toBe('payments audit');
  });

  it("refuses a broken verifier file (compose, Kubernetes: the verifier's own watch)", async () => {
    const partner = await stack.mintToken({ clientId: 'partner-app' });
    const before = readFileSync(stack.files.verifierConfig, 'utf8');
    const refusedBefore = /verifier_config_reloads_total\{outcome="refused"\} (\d+)/.exec(
      await metrics(),
    )?.[1];
    replace(stack.files.verifierConfig, 'not json');
    const start = Date.now();
    while (
      !(await metrics()).includes(
        `verifier_config_reloads_total{outcome="refused"} ${Number(refusedBefore ?? 0) + 1}`,
      )
    ) {
      expect(Date.now() - start).toBeLessThan(BOUND_MS);
      await sleep(200);
    }
    expect(await get('/secret/audit', partner)).toBe(200);
    replace(stack.files.verifierConfig, before);
  });
});

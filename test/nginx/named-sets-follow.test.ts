// NGINX as its image runs under docker compose and Kubernetes, but as processes on this host: the
// named sets come from the verifier's own policy file (SG_POLICY_FILE) and the secret-set watcher
// (nginx/bin/sg-secret-sets) follows it, rendering again with nginx/bin/sg-render and reloading
// NGINX gracefully when the names change. A stand-in verifier that allows every policy answers
// behind it, so every status here is NGINX's own routing: a name it serves reaches the verifier, any
// other is a 404 the verifier never sees.
import { chmod, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalNginx } from '../../stack/nginx/local-nginx.js';
import { freePort } from '../../stack/ports.js';
import { startNamedSetsNginx } from '../support/named-sets-nginx.js';
import {
  contractIssuer,
  contractTokens,
  startContractVerifier,
  type ContractVerifier,
} from './contract-verifier.js';

/** A secrets file whose named sets are `names`, each with a value naming it. */
const secretsFor = (names: string[]) => ({
  default: { 'x-api-key': 'follow-default' },
  policies: Object.fromEntries(names.map((name) => [name, { default: { set: `${name}-value` } }])),
});
/** A verifier document whose policies are `secret` and `names`. */
const policiesFor = (names: string[]) => ({
  issuers: [{ type: 'jwt', issuer: contractIssuer, audience: 'secret-gate-api' }],
  policies: Object.fromEntries(
    ['secret', ...names].map((name) => [name, { issuers: [contractIssuer] }]),
  ),
});

let work: string;
let verifier: ContractVerifier;
let nginx: LocalNginx;
let policyFile: string;
let secretsFile: string;

/** Replaced whole, as an editor that renames over the file (or a `..data` swap) does. */
async function replace(file: string, text: string): Promise<void> {
  await writeFile(`${file}.next`, text);
  await rename(`${file}.next`, file);
}

async function get(pathname: string): Promise<{ status: number; body: string }> {
  const response = await fetch(`${nginx.baseUrl}${pathname}`, {
    headers: { authorization: `Bearer ${contractTokens.spaDemo}` },
  });
  return { status: response.status, body: await response.text() };
}

const offered = async () =>
  ((await (await fetch(`${nginx.baseUrl}/config.json`)).json()) as { secretSets?: string })
    .secretSets;

/**
 * Waits for `pathname` to answer `status`: the old workers finish the requests they hold for a
 * moment after a reload, and the set files follow the secrets file within a poll.
 */
async function answers(pathname: string, status: number): Promise<void> {
  await expect.poll(async () => (await get(pathname)).status, { timeout: 10_000 }).toBe(status);
}

/** Waits for the watcher's log to say `text` (after `from` characters of it). */
async function logged(text: string | RegExp, from = 0): Promise<void> {
  await expect
    .poll(() => nginx.output().slice(from), { timeout: 15_000, interval: 100 })
    .toMatch(text);
}

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'sg-follow-'));
  // NGINX's workers (another user when this runs as root) read the set files below it.
  await chmod(work, 0o755);
  policyFile = path.join(work, 'verifier.json');
  secretsFile = path.join(work, 'secrets.json');
  await writeFile(policyFile, JSON.stringify(policiesFor(['payments'])));
  await writeFile(secretsFile, JSON.stringify(secretsFor(['payments'])));
  const verifierPort = await freePort();
  verifier = await startContractVerifier(verifierPort);
  nginx = await startNamedSetsNginx({
    work,
    verifierPort,
    secretsFile,
    policyFile,
    issuer: contractIssuer,
  });
}, 60_000);

afterAll(async () => {
  await nginx?.stop();
  await verifier?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe("NGINX's named sets follow the verifier's policy file", () => {
  it('serves at start exactly the policy names of the file: the set 200, any other name 404 without a verifier call', async () => {
    expect(await offered()).toBe('payments');
    expect(await get('/secret/payments')).toEqual({
      status: 200,
      body: '{"set":"payments-value"}\n',
    });
    const calls = verifier.received.length;
    expect((await get('/secret/audit')).status).toBe(404);
    expect(verifier.received.length).toBe(calls);
  });

  it('serves a set added to both files and drops the one removed, after one graceful reload', async () => {
    const pid = nginx.process.pid;
    const from = nginx.output().length;
    // The values first, then the policies (docs/configuration.md): in between the two files
    // disagree and the running names are kept.
    await replace(secretsFile, JSON.stringify(secretsFor(['audit'])));
    await replace(policyFile, JSON.stringify(policiesFor(['audit'])));
    await logged(/named sets: now audit; NGINX reloaded/, from);
    await answers('/secret/audit', 200);
    expect(await get('/secret/audit')).toEqual({ status: 200, body: '{"set":"audit-value"}\n' });
    const calls = verifier.received.length;
    expect((await get('/secret/payments')).status).toBe(404);
    expect(verifier.received.length).toBe(calls);
    expect(await offered()).toBe('audit');
    // The same master process: a reload, not a restart.
    expect(nginx.process.pid).toBe(pid);
    expect(nginx.process.exitCode).toBeNull();
  });

  it('refuses a broken policy file with one line and keeps serving the running names', async () => {
    const from = nginx.output().length;
    await replace(policyFile, '{"policies": {"secret": {}, "payments": ');
    await logged(
      /named sets: change refused: policy file \S+ is not JSON; NGINX keeps serving: audit\n/,
      from,
    );
    expect((await get('/secret/audit')).status).toBe(200);
    expect((await get('/secret/payments')).status).toBe(404);
    expect(await offered()).toBe('audit');
  });

  it('refuses a policy the secrets file has no set for, naming both files, and keeps the running names', async () => {
    const from = nginx.output().length;
    await replace(policyFile, JSON.stringify(policiesFor(['audit', 'reports'])));
    await logged(
      `named sets: change refused: policy "reports" has no set in the secrets file ${secretsFile} (the policy file ${policyFile} and the secrets file ${secretsFile} must name the same sets); NGINX keeps serving: audit`,
      from,
    );
    expect((await get('/secret/reports')).status).toBe(404);
    expect((await get('/secret/audit')).status).toBe(200);
    // Fixed by the secrets file: both files agree again and the name is served.
    await replace(secretsFile, JSON.stringify(secretsFor(['audit', 'reports'])));
    await logged(/named sets: now audit reports; NGINX reloaded/, from);
    await answers('/secret/reports', 200);
    expect(await get('/secret/reports')).toEqual({
      status: 200,
      body: '{"set":"reports-value"}\n',
    });
  });

  it('needs no reload when a file changes but the names do not', async () => {
    const from = nginx.output().length;
    await replace(
      policyFile,
      JSON.stringify({ ...policiesFor(['audit', 'reports']), logLevel: 'debug' }),
    );
    // Two polls to settle and one to render: a second is plenty on a loaded machine.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(nginx.output().slice(from)).not.toContain('named sets');
    expect(await offered()).toBe('audit reports');
  });
});

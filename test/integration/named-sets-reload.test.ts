// A named set added and removed while requests for it keep coming, with NGINX as its image runs it
// under compose and Kubernetes (the named sets read from the verifier's policy file, followed by the
// secret-set watcher) and the real verifier following the same file: each picks the change up on
// its own, so for a moment they disagree. What a request gets then is the contract
// docs/configuration.md states: a 404 at the edge or the verifier's 403, never a secret of a set
// the policies do not (or no longer) name, never a 5xx; and in the end the new state everywhere.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalNginx } from '../../stack/nginx/local-nginx.js';
import { freePort } from '../../stack/ports.js';
import { startNamedSetsNginx } from '../support/named-sets-nginx.js';
import { waitForHttp } from '../../stack/service-process.js';
import { REPO_ROOT } from '../../stack/start-stack.js';
import {
  AUDIENCE,
  ISSUER,
  mintToken,
  startJwksServer,
  type JwksServer,
} from '../../verifier/src/testing/fixtures.js';

const value = (name: string) => `${name}-reload-value`;
const secretsFor = (names: string[]) => ({
  default: { 'x-api-key': 'reload-default' },
  policies: Object.fromEntries(names.map((name) => [name, { default: { set: value(name) } }])),
});

let work: string;
let jwks: JwksServer;
let verifier: ChildProcess;
let nginx: LocalNginx;
let policyFile: string;
let secretsFile: string;
let token: string;

const policiesFor = (names: string[]) => ({
  issuers: [{ issuer: ISSUER, jwksUri: jwks.url, audience: AUDIENCE }],
  policies: Object.fromEntries(
    ['secret', ...names].map((name) => [name, { issuers: [ISSUER], scopes: ['secrets:read'] }]),
  ),
});

type Answer = { status: number; body: string };

async function replace(file: string, content: object): Promise<void> {
  await writeFile(`${file}.next`, JSON.stringify(content));
  await rename(`${file}.next`, file);
}

/**
 * Asks for `pathname` back to back while `change` runs, then until `settled` answers hold for a
 * second; every answer on the way, in order.
 */
async function answersDuring(
  pathname: string,
  change: (seen: readonly Answer[]) => Promise<void>,
  settled: number,
): Promise<Answer[]> {
  const seen: Answer[] = [];
  let stop = false;
  const asking = (async () => {
    while (!stop) {
      const response = await fetch(`${nginx.baseUrl}${pathname}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      seen.push({ status: response.status, body: await response.text() });
      await sleep(20);
    }
  })();
  await change(seen);
  const deadline = Date.now() + 20_000;
  let since = Date.now();
  while (Date.now() < deadline && Date.now() - since < 1000) {
    if (seen.at(-1)?.status !== settled) since = Date.now();
    await sleep(50);
  }
  stop = true;
  await asking;
  return seen;
}

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'sg-named-reload-'));
  // NGINX's workers (another user when this runs as root) read the set files below it.
  await chmod(work, 0o755);
  jwks = await startJwksServer(['rsaA']);
  token = await mintToken({ claims: { exp: Math.floor(Date.now() / 1000) + 600 } });
  policyFile = path.join(work, 'verifier.json');
  secretsFile = path.join(work, 'secrets.json');
  await writeFile(policyFile, JSON.stringify(policiesFor(['payments'])));
  await writeFile(secretsFile, JSON.stringify(secretsFor(['payments'])));

  const verifierPort = await freePort();
  verifier = spawn(process.execPath, [path.join(REPO_ROOT, 'verifier/dist/main.js')], {
    env: {
      PATH: process.env.PATH,
      VERIFIER_CONFIG: policyFile,
      VERIFIER_LISTEN: `127.0.0.1:${verifierPort}`,
      VERIFIER_LOG_LEVEL: 'error',
    },
    stdio: 'ignore',
  });
  await waitForHttp(`http://127.0.0.1:${verifierPort}/readyz`, AbortSignal.timeout(20_000));

  nginx = await startNamedSetsNginx({
    work,
    verifierPort,
    secretsFile,
    policyFile,
    issuer: ISSUER,
  });
}, 60_000);

afterAll(async () => {
  await nginx?.stop();
  verifier?.kill('SIGTERM');
  await jwks?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('a named set changing under load, NGINX and the verifier each following the policy file', () => {
  it('serves the set that is there from the start', async () => {
    const response = await fetch(`${nginx.baseUrl}/secret/payments`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect([response.status, await response.text()]).toEqual([
      200,
      `${JSON.stringify({ set: value('payments') })}\n`,
    ]);
  });

  it('an added set (its values first, then its policy) is a 404 or a 403 until both have it, then its own values', async () => {
    const seen = await answersDuring(
      '/secret/audit',
      async () => {
        await replace(secretsFile, secretsFor(['payments', 'audit']));
        await sleep(600);
        await replace(policyFile, policiesFor(['payments', 'audit']));
      },
      200,
    );
    expect(seen.at(-1)?.status).toBe(200);
    for (const { status, body } of seen) {
      expect([200, 403, 404]).toContain(status);
      if (status === 200) expect(body).toBe(`${JSON.stringify({ set: value('audit') })}\n`);
      else expect(body).not.toContain('reload-value');
    }
    // The first answers come before either file changed: the name is unknown at the edge.
    expect(seen[0]?.status).toBe(404);
  }, 40_000);

  it('a removed set (its policy first, its values once the verifier refuses) is a 403 or a 404 from then on, never its values', async () => {
    const seen = await answersDuring(
      '/secret/payments',
      async (answers) => {
        await replace(policyFile, policiesFor(['audit']));
        // NGINX keeps the name while the secrets file still holds the set; the verifier drops the
        // policy within its bound (an allow it gave may be reused at the edge until then). Values
        // removed sooner would answer 503 to a caller whose allow is still reused.
        await expect
          .poll(() => answers.at(-1)?.status, { timeout: 15_000, interval: 50 })
          .toBe(403);
        await replace(secretsFile, secretsFor(['audit']));
      },
      404,
    );
    expect(seen.at(-1)?.status).toBe(404);
    // Allowed while neither has moved yet; once refused, never served again.
    const firstRefusal = seen.findIndex(({ status }) => status !== 200);
    expect(firstRefusal).toBeGreaterThanOrEqual(0);
    for (const { status, body } of seen.slice(firstRefusal)) {
      expect([403, 404]).toContain(status);
      expect(body).not.toContain('reload-value');
    }
  }, 40_000);
});

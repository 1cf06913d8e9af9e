// A hostile or impersonated IdP against the real verifier process: a JWKS that streams without end
// must not raise the verifier's memory (its pod limit is 192 Mi), and a key URL in plain http to a
// host that is not loopback must stop it at start, before it trusts a single key from there; so
// must a DPoP replay store in plain redis:// off loopback (proof ids and its password in clear).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../stack/ports.js';
import { REPO_ROOT } from '../../stack/start-stack.js';

const MiB = 1024 * 1024;
/** What the hostile JWKS offers: far more than the pod's memory limit. */
const OFFERED = 256 * MiB;
const POD_LIMIT = 192 * MiB;

const dist = join(REPO_ROOT, 'verifier', 'dist', 'main.js');
const verifierArgs = existsSync(dist)
  ? [dist]
  : ['--import', 'tsx', join(REPO_ROOT, 'verifier', 'src', 'main.ts')];

function verifierEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, VERIFIER_LOG_LEVEL: 'warn', ...extra };
}

/** Starts the verifier with `env` and waits for it to exit: these configurations must not start. */
function startVerifier(env: Record<string, string>) {
  return spawnSync(process.execPath, verifierArgs, {
    env: verifierEnv({ VERIFIER_LISTEN: '127.0.0.1:1', ...env }),
    encoding: 'utf8',
    timeout: 30_000,
  });
}

/** Peak resident set of a process (VmHWM), in bytes. */
function peakRss(pid: number): number {
  const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? Number.NaN) * 1024;
}

async function until(check: () => Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('condition not met in time');
}

describe('a JWKS that streams without end', () => {
  let hostile: Server;
  let verifier: ChildProcess;
  let verifierUrl = '';
  let sent = 0;
  let requests = 0;
  let closed = false;
  const chunk = Buffer.alloc(64 * 1024, 0x20);

  beforeAll(async () => {
    hostile = createServer((_req, res) => {
      requests += 1;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"keys":[');
      const pump = () => {
        while (sent < OFFERED) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end(']}');
      };
      res.on('close', () => {
        closed = true;
        res.removeAllListeners('drain');
      });
      pump();
    });
    const idpPort = await freePort();
    await new Promise<void>((resolve) => hostile.listen(idpPort, '127.0.0.1', resolve));
    const port = await freePort();
    verifierUrl = `http://127.0.0.1:${port}`;
    verifier = spawn(process.execPath, verifierArgs, {
      env: verifierEnv({
        VERIFIER_LISTEN: `127.0.0.1:${port}`,
        VERIFIER_ISSUER: `http://127.0.0.1:${idpPort}`,
        VERIFIER_JWKS_URI: `http://127.0.0.1:${idpPort}/jwks`,
        VERIFIER_AUDIENCE: 'secret-gate-api',
        // Time enough to swallow all 256 MiB, so only the size cap can stop the read.
        VERIFIER_FETCH_TIMEOUT: '60s',
      }),
      stdio: 'ignore',
    });
    await until(async () => (await fetch(`${verifierUrl}/healthz`)).status === 200, 30_000);
    // The first key-set fetch runs at start; wait until the verifier has hung up on it.
    await until(() => Promise.resolve(requests > 0 && closed), 60_000);
  }, 90_000);

  afterAll(async () => {
    verifier?.kill('SIGTERM');
    await new Promise((resolve) => hostile?.close(resolve));
  });

  it('stops reading past 1 MiB: the hostile server pushes a few MiB at most, not the 256 MiB it offers', () => {
    expect(sent).toBeLessThan(16 * MiB);
  });

  it("keeps the verifier's peak memory below its pod limit", () => {
    expect(peakRss(verifier.pid!)).toBeLessThan(POD_LIMIT);
  });

  it('stays alive, not ready, and answers a token with a 401, never a 500', async () => {
    expect(verifier.exitCode).toBeNull();
    expect((await fetch(`${verifierUrl}/readyz`)).status).toBe(503);
    const answer = await fetch(`${verifierUrl}/verify`, {
      headers: { authorization: 'Bearer a.b.c' },
    });
    expect(answer.status).toBe(401);
  });
});

describe('key and introspection URLs in plain http', () => {
  it('refuses to start with a JWKS on a host that is not loopback, naming the opt-in', () => {
    const run = startVerifier({
      VERIFIER_ISSUER: 'https://idp.example',
      VERIFIER_JWKS_URI: 'http://idp.example/jwks',
      VERIFIER_AUDIENCE: 'secret-gate-api',
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(
      'VERIFIER_JWKS_URI: "http://idp.example/jwks" is plain http to a host that is not loopback',
    );
    expect(run.stderr).toContain('"allowHttp": true');
  });

  it('refuses to start with a plain redis:// replay store on a host that is not loopback, naming the opt-in', () => {
    const run = startVerifier({
      VERIFIER_ISSUER: 'https://idp.example',
      VERIFIER_AUDIENCE: 'secret-gate-api',
      VERIFIER_DPOP: 'required',
      VERIFIER_REDIS_URL: 'redis://:hunter2-password@replay-store.internal:6379',
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('VERIFIER_REDIS_URL: plain redis to a host that is not loopback');
    expect(run.stderr).toContain('VERIFIER_REDIS_ALLOW_PLAINTEXT=true');
    expect(run.stderr).not.toContain('hunter2-password');
  });
});

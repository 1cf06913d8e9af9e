// startStack() leaves nothing behind: stop() ends every process group, and if the runner itself is
// killed outright (SIGKILL, no handlers run) the kernel ends its children too. `npm start` removes
// its memory directory (edge-cache files hold tokens) on SIGTERM to its process group, and a start
// removes the one a killed run left.
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { OWNER_FILE } from './nginx/render.js';
import { freePort } from './ports.js';
import { SERVICE_NAMES } from './service-env.js';
import { REPO_ROOT, startStack } from './start-stack.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function gone(pids: number[]): Promise<boolean> {
  for (let i = 0; i < 50; i++) {
    if (!pids.some(alive)) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

describe('startStack process hygiene', () => {
  it('stop() ends the IdP, the verifier and every NGINX process', async () => {
    const stack = await startStack();
    const pids = SERVICE_NAMES.map((name) => stack.pid(name)).filter(
      (pid): pid is number => pid !== undefined,
    );
    expect(pids).toHaveLength(3);
    expect((await fetch(stack.urls.hello)).status).toBe(200);
    await stack.stop();
    expect(await gone(pids)).toBe(true);
    await expect(fetch(stack.urls.hello)).rejects.toThrow();
  }, 120_000);

  it('leaves no orphans when the runner process is killed with SIGKILL', async () => {
    const script = `
      import { startStack } from './stack/start-stack.ts';
      const stack = await startStack();
      console.log(JSON.stringify(['idp', 'verifier', 'nginx'].map((name) => stack.pid(name))));`;
    const runner = spawn(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      {
        cwd: REPO_ROOT,
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const [line] = (await once(createInterface({ input: runner.stdout }), 'line')) as [string];
    const pids = JSON.parse(line) as number[];
    expect(pids.every(alive)).toBe(true);
    runner.kill('SIGKILL');
    expect(await gone(pids)).toBe(true);
  }, 120_000);
});

describe('the memory directory of a run (edge-cache files with tokens, the secret sets)', () => {
  it.each([
    ['its terminal still open', false],
    ['its terminal gone (stdout closed, so its goodbye line fails)', true],
  ])(
    'is gone once `npm start` has stopped after SIGTERM to its process group, %s',
    async (_case, closeTerminal) => {
      const runtimeDir = mkdtempSync(join(tmpdir(), 'secret-gate-npm-start-'));
      const ports = ['--port', '0', '--idp-port', '0'];
      const args = ['start', '--', ...ports, '--runtime-dir', runtimeDir, '--no-build'];
      const npm = spawn('npm', args, {
        cwd: REPO_ROOT,
        stdio: ['ignore', 'pipe', 'inherit'],
        detached: true, // its own process group, as a terminal or a service manager starts it
      });
      const group = -(npm.pid ?? 0);
      const exited = once(npm, 'exit');
      try {
        const lines = createInterface({ input: npm.stdout });
        const said: string[] = [];
        for await (const line of lines) {
          said.push(line);
          if (line.includes("-H 'Authorization: Bearer ")) break;
        }
        // The verifier on a socket only NGINX reaches, and the secret through NGINX.
        const verifierAt = /^\s+verifier\s+unix:(\S+)$/.exec(
          said.find((l) => /^\s+verifier\s/.test(l)) ?? '',
        );
        expect(verifierAt?.[1]).toBe(join(runtimeDir, 'verifier', 'verifier.sock'));
        expect(statSync(verifierAt?.[1] ?? '').isSocket()).toBe(true);
        // Its directory: the runner's, entered by NGINX's workers' group only when they are `nobody`.
        const socketDir = statSync(join(runtimeDir, 'verifier')).mode & 0o7777;
        expect(socketDir).toBe(process.getuid?.() === 0 ? 0o2750 : 0o700);
        const curl = said.at(-1) ?? '';
        const [, url = '', token = ''] =
          /curl -i (\S+) -H 'Authorization: Bearer (\S+)'/.exec(curl) ?? [];
        const answer = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
        expect(answer.status).toBe(200);
        // The directory the run's NGINX caches decisions in.
        const tunables = readFileSync(join(runtimeDir, 'nginx', 'tunables.conf'), 'utf8');
        const memoryDir = /proxy_cache_path (\S+)\/sg-edge-cache/.exec(tunables)?.[1] ?? '';
        expect(existsSync(join(memoryDir, OWNER_FILE))).toBe(true);
        if (closeTerminal) npm.stdout.destroy();
        process.kill(group, 'SIGTERM');
        await exited;
        // npm may leave before the runner has stopped its services: wait for the whole group.
        for (let i = 0; i < 150 && alive(group); i++)
          await new Promise((resolve) => setTimeout(resolve, 100));
        expect(alive(group)).toBe(false);
        expect(existsSync(memoryDir)).toBe(false);
      } finally {
        if (alive(group)) process.kill(group, 'SIGKILL');
        rmSync(runtimeDir, { recursive: true, force: true });
      }
    },
    120_000,
  );

  it('left by a run that was killed is removed by the next start', async () => {
    // A runner that is gone: its process id names no process any more.
    const gone = spawnSync('true').pid ?? 0;
    const stale = join(
      '/dev/shm',
      `secret-gate-${'f'.repeat(8)}${gone.toString(16).padStart(8, '0')}`,
    );
    mkdirSync(join(stale, 'sg-edge-cache'), { recursive: true, mode: 0o700 });
    writeFileSync(join(stale, 'sg-edge-cache', 'entry'), 'Authorization: Bearer eyJ…');
    writeFileSync(join(stale, OWNER_FILE), `${gone}\n`);
    const stack = await startStack();
    try {
      expect(existsSync(stale)).toBe(false);
    } finally {
      await stack.stop();
      rmSync(stale, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('npm start with a policy file it cannot honour', () => {
  it('says each problem on a line of its own and exits 2 before anything listens', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sg-bad-policies-'));
    try {
      const file = join(dir, 'policies.json');
      writeFileSync(
        file,
        JSON.stringify({ policies: { secret: { scope: 'x' }, payments: { dpop: 'yes' } } }),
      );
      const [port, idpPort] = [await freePort(), await freePort()];
      const run = spawnSync(
        process.execPath,
        [
          '--import',
          'tsx',
          'stack/cli.ts',
          '--config',
          file,
          '--port',
          String(port),
          '--idp-port',
          String(idpPort),
          '--runtime-dir',
          join(dir, 'run'),
          '--no-build',
        ],
        { cwd: REPO_ROOT, encoding: 'utf8', timeout: 60_000, env: { PATH: process.env.PATH } },
      );
      expect(run.status).toBe(2);
      const lines = run.stderr.trim().split('\n').slice(-2);
      expect(lines).toEqual([
        expect.stringMatching(new RegExp(`^${file}: policies\\.secret: .*"scope"`)),
        expect.stringMatching(new RegExp(`^${file}: policies\\.payments\\.dpop: `)),
      ]);
      for (const at of [port, idpPort])
        await expect(fetch(`http://127.0.0.1:${at}/hello`)).rejects.toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});

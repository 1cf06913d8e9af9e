// startStack() leaves nothing behind: stop() ends every process group, and if the runner itself is
// killed outright (SIGKILL, no handlers run) the kernel ends its children too.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
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

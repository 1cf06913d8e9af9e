// The production-shaped local run as a specification: the gate works end to end while NGINX and
// the verifier run unprivileged as two users, the verifier is reachable only through its unix
// socket and cannot read the secrets, the configuration cannot be changed by the services, and
// the dev IdP has no control surface.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asUser, startProductionStack, type ProductionStack } from '../../stack/production.js';

/** Uid and NoNewPrivs of a process, from /proc. */
function processInfo(pid: number) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const uids = /^Uid:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(status)?.slice(1).map(Number) ?? [];
  const noNewPrivs = /^NoNewPrivs:\s+(\d)/m.exec(status)?.[1] === '1';
  return { uids, noNewPrivs };
}

/** Children of a process (NGINX workers of the master). */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        // Field 4 of /proc/PID/stat is the parent pid; the command name may contain spaces.
        const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
      } catch {
        return false; // exited meanwhile
      }
    })
    .map(Number);
}

/** TCP sockets in LISTEN state owned by a process. */
function tcpListeners(pid: number): string[] {
  const inodes = new Set(
    readdirSync(`/proc/${pid}/fd`)
      .map((fd) => {
        try {
          return /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
        } catch {
          return undefined;
        }
      })
      .filter((inode): inode is string => inode !== undefined),
  );
  return ['/proc/net/tcp', '/proc/net/tcp6'].flatMap((table) =>
    readFileSync(table, 'utf8')
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(/\s+/))
      .filter((fields) => fields[3] === '0A' && inodes.has(fields[9] ?? ''))
      .map((fields) => fields[1] ?? ''),
  );
}

describe('the production-shaped local run', () => {
  let stack: ProductionStack;

  beforeAll(async () => {
    stack = await startProductionStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('serves /hello and hands the secret set to a signed-in caller', async () => {
    expect((await fetch(stack.urls.hello)).status).toBe(200);
    const token = await stack.mintToken();
    const response = await fetch(stack.urls.secret, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(response.status).toBe(200);
    const devSecrets = JSON.parse(readFileSync(stack.files.secrets, 'utf8')) as {
      clients: Record<string, unknown>;
    };
    expect(await response.json()).toEqual(devSecrets.clients['spa-demo']);
  });

  it('refuses a missing and a garbage token with 401 and no secret', async () => {
    for (const headers of [{}, { authorization: 'Bearer not.a.token' }] as Record<
      string,
      string
    >[]) {
      const response = await fetch(stack.urls.secret, { headers });
      expect(response.status).toBe(401);
      expect(await response.text()).not.toContain('api-key');
    }
  });

  it('runs the NGINX master and its workers as one unprivileged user and the verifier as another, unable to regain privileges', () => {
    const nginx = stack.pid('nginx') as number;
    const verifier = stack.pid('verifier') as number;
    const workers = childrenOf(nginx);
    expect(workers.length).toBeGreaterThan(0);
    const owners: Array<[number, number]> = [
      ...[nginx, ...workers].map((pid): [number, number] => [pid, stack.runAs.uid]),
      [verifier, stack.verifierRunAs.uid],
    ];
    for (const [pid, uid] of owners) {
      const { uids, noNewPrivs } = processInfo(pid);
      expect(uids, `pid ${pid}`).toEqual([uid, uid, uid, uid]);
      expect(uid).not.toBe(0);
      if (stack.runAs.switched) expect(noNewPrivs, `pid ${pid}`).toBe(true);
    }
    // Only a runner started as root can split the users (as the pod's runAsUser does).
    if (stack.runAs.switched) expect(stack.verifierRunAs.uid).not.toBe(stack.runAs.uid);
  });

  it('keeps the verifier off the network: no TCP listener, only its socket, shared with NGINX through a group', () => {
    expect(tcpListeners(stack.pid('verifier') as number)).toEqual([]);
    expect(stack.urls.verifier).toBe(`unix:${stack.verifierSocket}`);
    const socket = statSync(stack.verifierSocket);
    expect(socket.isSocket()).toBe(true);
    expect(socket.uid).toBe(stack.verifierRunAs.uid);
    expect(socket.mode & 0o777).toBe(0o660);
    const dir = statSync(join(stack.verifierSocket, '..'));
    expect(dir.mode & 0o777).toBe(0o770);
    expect(dir.uid).toBe(stack.verifierRunAs.uid);
    expect(dir.gid).toBe(stack.socketGroup);
  });

  it("leaves the verifier's user unable to read the secrets file, the per-set files or NGINX's edge cache", async () => {
    if (!stack.runAs.switched) return; // one caller, one uid: nothing to separate
    // One allowed request, so the set files and an edge-cache entry exist.
    const token = await stack.mintToken();
    const allowed = await fetch(stack.urls.secret, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(allowed.status).toBe(200);
    const memory = stack.env.nginx.SG_MEMORY_DIR as string;
    const sets = join(memory, 'sg-secret-sets');
    const setFiles = readdirSync(sets, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => join(entry.parentPath, entry.name));
    expect(setFiles.length).toBeGreaterThan(0);
    const asVerifier = (script: string, path: string) => {
      const [command, args] = asUser(stack.verifierRunAs, '/bin/sh', ['-c', script, 'sh', path]);
      return spawnSync(command, args, { encoding: 'utf8' });
    };
    for (const file of [stack.files.secrets, ...setFiles]) {
      // NGINX's user reads it; the verifier's does not.
      const [command, args] = asUser(stack.runAs, '/bin/cat', [file]);
      expect(spawnSync(command, args).status, `nginx reads ${file}`).toBe(0);
      const read = asVerifier('cat "$1"', file);
      expect(read.status, file).not.toBe(0);
      expect(read.stdout).toBe('');
    }
    for (const dir of [sets, join(memory, 'sg-edge-cache')])
      expect(asVerifier('ls "$1"', dir).status, dir).not.toBe(0);
  });

  it('leaves the configuration unwritable for the services user', () => {
    expect(stack.readOnlyDirs).toContain(join(stack.files.nginxConf, '..'));
    for (const dir of stack.readOnlyDirs) {
      const [command, args] = asUser(stack.runAs, '/bin/sh', [
        '-c',
        'echo x > "$1/written-by-service"',
        'sh',
        dir,
      ]);
      expect(spawnSync(command, args).status, dir).not.toBe(0);
      expect(existsSync(join(dir, 'written-by-service'))).toBe(false);
    }
  });

  it('keeps the secrets file away from other users (no world bits)', () => {
    expect(statSync(stack.files.secrets).mode & 0o007).toBe(0);
  });

  it('lets NGINX write only its run, temp and log directories, owned by the services user', () => {
    // Paths relative to the NGINX prefix (nginx/templates/nginx.conf.template).
    for (const name of ['run', 'temp', 'logs']) {
      expect(statSync(join(stack.files.nginxPrefix, name)).uid, name).toBe(stack.runAs.uid);
    }
    expect(existsSync(join(stack.files.nginxPrefix, 'run', 'nginx.pid'))).toBe(true);
  });

  it('offers no dev IdP control API', async () => {
    for (const path of ['/dev/stats', '/dev/keys']) {
      expect((await fetch(`${stack.urls.issuer}${path}`)).status, path).toBe(404);
    }
  });
});

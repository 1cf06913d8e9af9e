// Runs the rendered templates with the system's nginx from a prefix directory, unprivileged and
// in the foreground, for the NGINX tests and benchmarks: render, `nginx -t`, start, wait, stop.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertWorkersCanReach } from '../worker-access.js';
import { nginxPaths, renderNginxConfig } from './render.js';
import { OWN_MEMORY_DIR_ENV, removeMemoryDir, withSecretSets } from './secret-sets-watcher.js';
import type { NginxEnv } from './variables.js';

export interface LocalNginxStart {
  /** Prefix directory; the templates are rendered into it. */
  readonly prefix: string;
  /** SG_ values, usually from localNginxEnv(). */
  readonly env: NginxEnv;
  /**
   * More environment for NGINX and its secret-set watcher (e.g. SECRETS) besides the SG_ values;
   * nothing else is inherited.
   */
  readonly processEnv?: Readonly<Record<string, string>>;
  readonly nginxBin?: string;
  /** Runs on the rendered prefix before `nginx -t` (tests that change the configuration). */
  readonly edit?: (prefix: string) => Promise<void>;
}

export interface LocalNginx {
  /** `http://` + SG_LISTEN. */
  readonly baseUrl: string;
  readonly process: ChildProcess;
  /** The JSON access log lines written so far. */
  accessLog(): Promise<string>;
  /** What NGINX and the secret-set watcher wrote to stderr so far. */
  output(): string;
  /** Graceful stop; resolves once the master has exited. */
  stop(): Promise<void>;
}

function argsFor(prefix: string): string[] {
  const conf = path.join(prefix, 'nginx.conf');
  return ['-p', prefix, '-c', conf, '-e', 'stderr'];
}

/**
 * Renders, checks with `nginx -t` (its output becomes the error when the check fails) and starts
 * nginx with `daemon off` under the secret-set watcher, resolving once /hello answers.
 */
export async function startLocalNginx(options: LocalNginxStart): Promise<LocalNginx> {
  const nginxBin = options.nginxBin ?? 'nginx';
  assertWorkersCanReach([
    path.join(options.env.SG_SPA_ROOT, 'index.html'),
    options.env.SG_SECRETS_FILE,
  ]);
  await renderNginxConfig({
    templatesDir: nginxPaths.templatesDir,
    outDir: options.prefix,
    env: options.env,
  });
  try {
    return await startRendered(options, nginxBin);
  } catch (error) {
    // The memory directory lives outside the prefix: a start that fails must not leave it.
    removeMemoryDir(options.env.SG_MEMORY_DIR);
    throw error;
  }
}

async function startRendered(options: LocalNginxStart, nginxBin: string): Promise<LocalNginx> {
  await options.edit?.(options.prefix);
  const args = argsFor(options.prefix);
  const processEnv = {
    PATH: process.env.PATH ?? '/usr/sbin:/usr/bin',
    ...options.env,
    ...OWN_MEMORY_DIR_ENV,
    ...options.processEnv,
  };
  const check = spawnSync(nginxBin, ['-t', '-q', ...args], { env: processEnv, encoding: 'utf8' });
  if (check.status !== 0) {
    throw new Error(`nginx -t failed for ${options.prefix}:\n${check.stderr}${check.stdout}`);
  }
  const [command, commandArgs] = withSecretSets(nginxBin, [...args, '-g', 'daemon off;']);
  const child = spawn(command, commandArgs, {
    env: processEnv,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const baseUrl = `http://${options.env.SG_LISTEN}`;

  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nginx exited at start:\n${stderr}`);
    try {
      const response = await fetch(`${baseUrl}/hello`);
      await response.arrayBuffer();
      if (response.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`nginx did not answer on ${baseUrl} within 10 s:\n${stderr}`);
    }
    await sleep(50);
  }

  return {
    baseUrl,
    process: child,
    accessLog: () => readFile(path.join(options.prefix, 'logs', 'access.log'), 'utf8'),
    output: () => stderr,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        // SIGQUIT: graceful shutdown, workers finish their requests and the master removes its pid.
        child.kill('SIGQUIT');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
      // The edge cache and the per-set secret files live in memory, outside the prefix.
      removeMemoryDir(options.env.SG_MEMORY_DIR);
    },
  };
}

import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { freePort } from '../stack/ports.js';
import { startMeasuredProcess, type MeasuredProcess } from './measured-process.js';

// A one-line server: STATUS (204 unless set) on PORT after DELAY ms, printing its port once it listens.
const SERVE = `setTimeout(() => require('node:http').createServer((q, s) => s.writeHead(+process.env.STATUS || 204).end()).listen(+process.env.PORT, '127.0.0.1', () => console.log('PORT ' + process.env.PORT)), +process.env.DELAY)`;

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Whether `pid` is a live process (a zombie left for a parent that never reaps it is not). */
function runs(pid: number): boolean {
  const stat = existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, 'utf8') : '';
  return stat !== '' && stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
}

const running: MeasuredProcess[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((server) => server.stop()));
});

async function serve(ready: 'url' | 'any status' | 'line', delayMs = 0, status = 204) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/`;
  const server = await startMeasuredProcess({
    name: 'tiny server',
    command: process.execPath,
    args: ['-e', SERVE],
    env: { PORT: String(port), DELAY: String(delayMs), STATUS: String(status) },
    ready:
      ready === 'line' ? { line: /^PORT (\d+)$/m } : { url, anyStatus: ready === 'any status' },
    readyTimeoutMs: ready === 'url' && status !== 204 ? 600 : 5000,
  });
  running.push(server);
  return { server, port };
}

describe('startMeasuredProcess', () => {
  it('is ready once its URL answers, not before', async () => {
    const { port } = await serve('url', 300);
    expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(204);
  });

  it('waits for a 2xx by default, and takes any answer with anyStatus', async () => {
    await expect(serve('url', 0, 401)).rejects.toThrow('"tiny server" was not ready within 600 ms');
    const { port } = await serve('any status', 0, 401);
    expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(401);
  });

  it('is ready once a line on its stdout matches, and hands back the match', async () => {
    const { server, port } = await serve('line');
    expect(server.readyMatch?.[1]).toBe(String(port));
    expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(204);
  });

  it('fails with the exit code of a process that exits before it is ready', async () => {
    await expect(
      startMeasuredProcess({
        name: 'doomed',
        command: process.execPath,
        args: ['-e', 'process.exit(3)'],
        ready: { url: 'http://127.0.0.1:9/' },
        readyTimeoutMs: 5000,
      }),
    ).rejects.toThrow('"doomed" exited with code 3 before it was ready');
  });

  it('fails after its bounded wait when it never gets ready', async () => {
    const started = Date.now();
    await expect(
      startMeasuredProcess({
        name: 'silent',
        command: process.execPath,
        args: ['-e', 'setInterval(() => {}, 1000)'],
        ready: { line: /never/ },
        readyTimeoutMs: 500,
      }),
    ).rejects.toThrow('"silent" was not ready within 500 ms');
    expect(Date.now() - started).toBeLessThan(4000);
  });

  it('stop kills the process and resolves once it has exited', async () => {
    const { server, port } = await serve('url');
    await server.stop();
    expect(runs(server.pid)).toBe(false);
    await expect(fetch(`http://127.0.0.1:${port}/`)).rejects.toThrow();
    await server.stop(); // a second stop is a no-op
  });

  it('hands its stderr to a function when given one', async () => {
    let seen = '';
    const server = await startMeasuredProcess({
      name: 'reporter',
      command: process.execPath,
      args: ['-e', "console.error('GC 7'); console.log('READY'); setInterval(() => {}, 1000)"],
      ready: { line: /READY/ },
      readyTimeoutMs: 5000,
      stderr: (text) => (seen += text),
    });
    running.push(server);
    await vi.waitFor(() => expect(seen).toBe('GC 7\n'));
  });

  it('kills what it started when the bench is ended by SIGTERM', async () => {
    // A bench in miniature: it starts a process, prints its PID, then is sent SIGTERM.
    const bench = `import { startMeasuredProcess } from './perf/measured-process.ts';
      const s = await startMeasuredProcess({ name: 'child', command: process.execPath,
        args: ['-e', "console.log('READY'); setInterval(() => {}, 1000)"],
        ready: { line: /READY/ }, readyTimeoutMs: 5000 });
      console.log(s.pid);
      process.kill(process.pid, 'SIGTERM');
      setInterval(() => {}, 1000);`;
    const ended = await run(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', bench],
      { cwd: ROOT },
    ).catch((error: { code: number; stdout: string }) => error);
    expect('code' in ended && ended.code).toBe(1);
    const pid = Number(ended.stdout.trim());
    expect(pid).toBeGreaterThan(0);
    await vi.waitFor(() => expect(runs(pid)).toBe(false));
  });

  it('leaves SIGTERM to a run that handles it, which then stops what it started', async () => {
    // The stress harness in miniature: on SIGTERM it stops its service itself, then reports.
    const harness = `import { startMeasuredProcess } from './perf/measured-process.ts';
      const s = await startMeasuredProcess({ name: 'child', command: process.execPath,
        args: ['-e', "console.log('READY'); setInterval(() => {}, 1000)"],
        ready: { line: /READY/ }, readyTimeoutMs: 5000 });
      process.on('SIGTERM', async () => {
        await s.stop();
        console.log('stopped ' + s.pid);
        process.exit(0);
      });
      process.kill(process.pid, 'SIGTERM');
      setInterval(() => {}, 1000);`;
    const { stdout } = await run(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', harness],
      { cwd: ROOT },
    );
    const pid = Number(/^stopped (\d+)$/m.exec(stdout)?.[1]);
    expect(pid).toBeGreaterThan(0);
    expect(runs(pid)).toBe(false);
  });

  it('refuses callgrind counters for a process not under callgrind', async () => {
    const { server } = await serve('url');
    expect(() => server.zero()).toThrow('"tiny server" does not run under callgrind');
  });
});

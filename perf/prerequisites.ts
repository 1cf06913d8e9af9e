// What a stress run needs from the machine, checked before anything starts so a missing package
// is one clear message with the command that installs it.
import { spawnSync } from 'node:child_process';
import { PYTHON } from './locust.js';

const PROBES: readonly {
  readonly what: string;
  readonly command: string;
  readonly args: string[];
}[] = [
  { what: 'python3-locust', command: PYTHON, args: ['-c', 'import locust'] },
  { what: 'nginx', command: 'nginx', args: ['-v'] },
  // wrk -v exits 1 even when wrk works.
  { what: 'wrk', command: 'sh', args: ['-c', 'command -v wrk'] },
  { what: 'util-linux (taskset)', command: 'taskset', args: ['-V'] },
];

/** Undefined when everything is there, otherwise the message to print. */
export function checkStressPrerequisites(): string | undefined {
  const missing = PROBES.filter(
    (probe) => spawnSync(probe.command, probe.args, { stdio: 'ignore' }).status !== 0,
  ).map((probe) => probe.what);
  if (missing.length === 0) return undefined;
  return `missing: ${missing.join(', ')}. Install with: apt-get install python3-locust wrk nginx libnginx-mod-http-js util-linux`;
}

const COUNT_PROBES: readonly { readonly what: string; readonly command: string }[] = [
  { what: 'valgrind', command: 'valgrind' },
  { what: 'valgrind (callgrind_control)', command: 'callgrind_control' },
  { what: 'strace', command: 'strace' },
];

/** The counters `npm run bench:counts` runs; throws one message naming what to install. */
export function assertCountTools(): void {
  const missing = COUNT_PROBES.filter(
    (probe) =>
      spawnSync('sh', ['-c', `command -v ${probe.command}`], { stdio: 'ignore' }).status !== 0,
  ).map((probe) => probe.what);
  if (missing.length > 0) {
    throw new Error(
      `missing: ${missing.join(', ')}. Install with: apt-get install valgrind strace`,
    );
  }
}

// Zero and dump the counters of a process running under callgrind (callgrind_control), and read
// the instructions of a dump: the counting every callgrind bench does around its measured requests.
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseCallgrindTotals } from './nginx-counts.js';

const run = promisify(execFile);

/** Zeroes the counters of a process under callgrind. */
export const callgrindZero = (pid: number) => control(pid, '--zero');

/**
 * Instructions of a process under callgrind (whose `--callgrind-out-file` is in `outDir`) since
 * its last zero or dump, from a dump labelled `label`.
 */
export async function callgrindDump(pid: number, outDir: string, label: string): Promise<number> {
  await control(pid, `--dump=${label}`);
  return parseCallgrindTotals(readFileSync(dumpFile(outDir, label), 'utf8'));
}

/** callgrind_control exits 0 even when it found no such process: its "OK." is the answer. */
async function control(pid: number, action: string): Promise<void> {
  const { stdout, stderr } = await run('callgrind_control', [action, String(pid)]);
  if (!/\bOK\./.test(stdout)) {
    throw new Error(`callgrind_control ${action} ${pid} failed: ${(stdout + stderr).trim()}`);
  }
}

/** The dump whose trigger names `label` (callgrind numbers dumps `callgrind.out.N`). */
function dumpFile(dir: string, label: string): string {
  for (const name of readdirSync(dir)) {
    if (!/^callgrind\.out\.\d+$/.test(name)) continue;
    const path = join(dir, name);
    if (readFileSync(path, 'utf8').includes(`\ndesc: Trigger: dump ${label}\n`)) return path;
  }
  throw new Error(`callgrind wrote no dump "${label}" in ${dir}`);
}

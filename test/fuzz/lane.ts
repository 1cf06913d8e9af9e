// The fuzzing lane: builds the Jazzer.js image (test/fuzz/Dockerfile) and runs one target in it
// for a bounded time, its new corpus inputs and any finding (crash, hang, slow input) copied out
// to a directory of this machine. Used by the CI lane (test/containers/fuzz.test.ts) and by long
// runs (`npm run fuzz`, test/fuzz/run.ts).
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../../stack/start-stack.js';
import { docker, IMAGE_TAG } from '../containers/engine.js';
import { DECISION_BUDGET_MS, type FuzzTargetName } from './fuzz-target.js';

const run = promisify(execFile);

export const FUZZ_IMAGE = `secret-gate-fuzz:${IMAGE_TAG}`;
/** Where test/fuzz/Dockerfile puts the bundled targets and their seeds (test/fuzz/bundle.ts). */
const LANE = '/src/fuzz-lane';
/**
 * Jazzer's own limit for one input, in milliseconds: past it the run stops with a `timeout-`
 * file. Above the targets' decision budget, which names a slow input before this cuts it off.
 */
const HANG_MS = DECISION_BUDGET_MS * 5;
/** Inputs up to 24 KiB: past every size cap the parsers apply (token, proof, event token). */
const MAX_INPUT_BYTES = 24 * 1024;
/**
 * Jazzer's bug detectors for what the parsers never do (run a command, open a file, evaluate code,
 * make a request) are off: they hook those functions in every module loaded, which halves the
 * inputs run per second. The prototype-pollution detector stays on: the parsers read JSON.
 */
const IDLE_DETECTORS = ['command-injection', 'path-traversal', 'remote-code-execution', 'ssrf'];
/** What libFuzzer names the inputs it stops on. */
const FINDING = /^(crash|timeout|oom|leak|slow-unit)-/;

/** `docker build` of the lane's image; after the first build only the changed layers run. */
export async function buildFuzzImage(): Promise<void> {
  await run('docker', ['build', '--quiet', '-f', 'test/fuzz/Dockerfile', '-t', FUZZ_IMAGE, '.'], {
    cwd: REPO_ROOT,
    timeout: 900_000,
    maxBuffer: 16 * 1024 * 1024,
  });
}

export interface FuzzRun {
  readonly target: FuzzTargetName;
  /** Jazzer's exit code: 0 when the time ran out with nothing found. */
  readonly exitCode: number;
  /** The inputs it stopped on, as files of this machine (`crash-<sha1>`, `timeout-<sha1>`, …). */
  readonly findings: string[];
  /** The directory of the inputs that reached new coverage during the run. */
  readonly corpus: string;
  /** Seed files read, inputs run and coverage (edges), from libFuzzer's log. */
  readonly seeds: number;
  readonly executions: number;
  readonly coverage: number;
  /** What the fuzzer printed (its progress lines and any finding's report). */
  readonly log: string;
}

/**
 * Fuzzes `target` for `seconds` from its committed corpus. `outDir/<target>/` is emptied first,
 * then receives the findings and `corpus/`. The container has no network and runs as this
 * machine's user, so what it writes is the caller's to read and delete.
 */
export async function runFuzzTarget(
  target: FuzzTargetName,
  options: { seconds: number; outDir: string },
): Promise<FuzzRun> {
  const out = resolve(options.outDir, target);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(join(out, 'corpus'), { recursive: true });
  const name = `sg-fuzz-${process.pid}-${target}`;
  const args = ['run', '--rm', '--name', name, '--network', 'none'];
  if (process.getuid && process.getgid)
    args.push('--user', `${process.getuid()}:${process.getgid()}`);
  args.push('-v', `${out}:/out`, FUZZ_IMAGE);
  args.push(`${LANE}/targets/${target}.fuzz.cjs`, '/out/corpus', `${LANE}/seeds/${target}`);
  args.push(`--timeout=${HANG_MS}`);
  for (const detector of IDLE_DETECTORS) args.push(`--disable_bug_detectors=${detector}`);
  args.push('--');
  args.push(`-max_total_time=${options.seconds}`, `-max_len=${MAX_INPUT_BYTES}`);
  args.push('-artifact_prefix=/out/', '-print_final_stats=1');

  let exitCode = 0;
  let log: string;
  try {
    // libFuzzer stops itself at max_total_time; the slack covers the start and a last slow input.
    const { stdout, stderr } = await run('docker', args, {
      timeout: (options.seconds + 120) * 1000,
      maxBuffer: 64 * 1024 * 1024,
    });
    log = stdout + stderr;
  } catch (error) {
    const failed = error as { code?: unknown; stdout?: string; stderr?: string; message: string };
    exitCode = typeof failed.code === 'number' ? failed.code : -1;
    log = `${failed.stdout ?? ''}${failed.stderr ?? failed.message}`;
    // A killed client leaves its container running: remove it.
    if (exitCode === -1) await docker('rm', '-f', name).catch(() => '');
  }
  const seeds = new RegExp(`(\\d+) files found in ${LANE}/seeds/`).exec(log);
  const done = /#(\d+)\s+DONE\s+cov: (\d+)/.exec(log);
  return {
    target,
    exitCode,
    findings: readdirSync(out)
      .filter((file) => FINDING.test(file))
      .map((file) => join(out, file)),
    corpus: join(out, 'corpus'),
    seeds: Number(seeds?.[1] ?? 0),
    executions: Number(done?.[1] ?? 0),
    coverage: Number(done?.[2] ?? 0),
    log: log.replace(/^.*\[BABEL\] Note:.*\n/gm, ''),
  };
}

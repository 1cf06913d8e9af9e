import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { variableRows, withReference } from './config-reference.js';

describe('the verifier reference in docs/configuration.md', () => {
  it('is the one generated from the model', () => {
    const doc = readFileSync(new URL('../docs/configuration.md', import.meta.url), 'utf8');
    expect(withReference(doc), 'run npm run docs:config').toBe(doc);
  });

  it('lists every variable with its default as an operator writes it', () => {
    const doc = readFileSync(new URL('../docs/configuration.md', import.meta.url), 'utf8');
    const defaults = new Map(variableRows().map((row) => [row.env, row.default ?? '']));
    expect(Object.fromEntries(defaults)).toMatchObject({
      VERIFIER_CLOCK_TOLERANCE: '30s',
      VERIFIER_ALGORITHMS: 'RS256,ES256,PS256,EdDSA',
      VERIFIER_LISTEN: '127.0.0.1:8090',
      VERIFIER_CACHE_MAX_BYTES: '64m',
      VERIFIER_FETCH_TIMEOUT: '5s',
    });
    for (const [name, fallback] of defaults) {
      const shown =
        fallback === '' ? '(—|none)' : `\`${fallback.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\``;
      expect(doc).toMatch(new RegExp(`\\| \`${name}\` \\| ${shown} \\|`));
    }
  });
});

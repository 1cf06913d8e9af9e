// The /verify contract in docs/architecture.md is generated from the code's one definition.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ARCHITECTURE_DOC, withVerifyContract } from './docs-contract.js';

describe('docs/architecture.md, the /verify headers', () => {
  it('carries the tables rendered from verifier/src/http/contract.ts and the plugins', () => {
    const doc = readFileSync(ARCHITECTURE_DOC, 'utf8');
    expect(withVerifyContract(doc), 'run npm run docs:config').toBe(doc);
    for (const name of ['X-Accel-Expires', 'X-Auth-Set', 'X-Auth-CF-Policy', 'X-Original-Origin'])
      expect(doc).toContain(`| \`${name}\``);
  });
});

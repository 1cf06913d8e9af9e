import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEdgeCheck, createEdgeKeyFile } from './edge-key.js';

describe('the edge key check', () => {
  const isEdge = createEdgeCheck('0123456789abcdef0123456789abcdef');

  it.each([
    ['the key', '0123456789abcdef0123456789abcdef', true],
    ['nothing', '', false],
    ['a prefix of it', '0123456789abcdef', false],
    ['it and more', '0123456789abcdef0123456789abcdef0', false],
    ['one character changed', '0123456789abcdef0123456789abcdeF', false],
  ])('takes %s: %s', (_what, presented, expected) => {
    expect(isEdge(presented)).toBe(expected);
  });
});

describe('making the edge key file', () => {
  let dir = '';
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes 32 random bytes in hex, 0640, once: a file already there is kept', () => {
    dir = mkdtempSync(join(tmpdir(), 'edge-key-'));
    const path = join(dir, 'edge-key');
    expect(createEdgeKeyFile(path)).toBe('created');
    const key = readFileSync(path, 'utf8');
    expect(key).toMatch(/^[0-9a-f]{64}\n$/);
    expect(statSync(path).mode & 0o777).toBe(0o640);
    expect(createEdgeKeyFile(path)).toBe('kept');
    expect(readFileSync(path, 'utf8')).toBe(key);
  });
});

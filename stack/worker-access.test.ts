import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { closedAncestor } from './worker-access.js';

describe('what the unprivileged workers can reach', () => {
  const base = mkdtempSync(join(tmpdir(), 'sg-reach-'));
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  it('names the first directory others cannot enter, as a checkout in /root would be', () => {
    const home = join(base, 'home');
    mkdirSync(join(home, 'secret-gate', 'spa', 'dist'), { recursive: true });
    chmodSync(base, 0o755);
    chmodSync(home, 0o700);
    expect(closedAncestor(join(home, 'secret-gate', 'spa', 'dist'))).toBe(home);
    chmodSync(home, 0o711);
    expect(closedAncestor(join(home, 'secret-gate', 'spa', 'dist'))).toBeUndefined();
  });

  it('checks from the root down and leaves missing directories to whoever needs them', () => {
    const modes: Record<string, number> = { '/': 0o755, '/a': 0o750, '/a/b': 0o700 };
    expect(closedAncestor('/a/b', (dir) => modes[dir] ?? 0o755)).toBe('/a');
    expect(closedAncestor(join(base, 'absent', 'dir'))).toBeUndefined();
  });
});

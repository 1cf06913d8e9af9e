// Test fixtures: key files written owner-only into a fresh directory, and a verified caller.

import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Caller } from './types.js';

export interface KeyDir {
  /** Writes `content` to `name` (mode 600 unless given) and returns its path. */
  write(name: string, content: string, mode?: number): string;
  remove(): void;
}

export function createKeyDir(): KeyDir {
  const dir = mkdtempSync(join(tmpdir(), 'credential-minter-'));
  return {
    write(name, content, mode = 0o600) {
      const path = join(dir, name);
      writeFileSync(path, content, { mode });
      chmodSync(path, mode);
      return path;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** 2026-12-04T12:00:00Z, the frozen "now" of the tests (epoch seconds). */
export const NOW = 1_796_385_600;

export function caller(overrides: Partial<Caller> = {}): Caller {
  return {
    iss: 'https://idp.example.com',
    sub: 'user-42',
    clientId: 'spa-demo',
    scopes: ['secrets:read', 'search'],
    claims: { tenant: 'acme', groups: ['eng', 'ops'], email: 'ada@example.com' },
    exp: NOW + 3600,
    token: 'eyJ.caller.token',
    ...overrides,
  };
}

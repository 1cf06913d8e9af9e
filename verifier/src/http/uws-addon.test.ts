import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  addonName,
  loadUws,
  MAX_REQUEST_HEAD_BYTES,
  readRecord,
  setRequestHeadLimit,
  type RecordedAddon,
} from './uws-addon.js';

const recorded = readRecord();
const file = join(dirname(createRequire(import.meta.url).resolve('uWebSockets.js')), addonName());
const mine = recorded.get(addonName()) as RecordedAddon;

function only(addon: Partial<RecordedAddon>): ReadonlyMap<string, RecordedAddon> {
  return new Map([[addonName(), { ...mine, ...addon }]]);
}

describe('the uWebSockets.js addon', () => {
  it('is recorded for this runtime, and the file installed is the recorded one', () => {
    expect(mine).toBeDefined();
    expect(createHash('sha256').update(readFileSync(file)).digest('hex')).toBe(mine.sha256);
    expect(typeof loadUws().getParts).toBe('function');
  });

  it('records only official-build Linux addons for Node 22 and 24, each with its glibc floor', () => {
    for (const [name, addon] of recorded) {
      expect(name).toMatch(/^uws_linux_(x64|arm64)_(127|137)\.node$/);
      expect(addon.node).toBe(name.endsWith('_137.node') ? 24 : 22);
      expect(addon.sha256).toMatch(/^[0-9a-f]{64}$/);
      expect(addon.release).toMatch(/^v20\.\d+\.\d+$/);
    }
  });

  it('refuses an addon whose sha256 differs, naming the file and both hashes', () => {
    const wrong = '0'.repeat(64);
    expect(() => loadUws(only({ sha256: wrong }))).toThrow(
      `uWebSockets.js addon ${file}: sha256 ${mine.sha256} differs from the recorded ${wrong} (verifier/uws-addons.json)`,
    );
  });

  it('refuses a runtime with no recorded addon, saying which Node and glibc it needs', () => {
    expect(() => loadUws(new Map())).toThrow(
      `no recorded uWebSockets.js addon for Node ${process.version} on ${process.platform}-${process.arch} (${addonName()}): the verifier runs on Node 22 (glibc >= 2.27) or Node 24 (glibc >= 2.38), Linux`,
    );
  });

  it('refuses an addon that needs a newer glibc than the system has, before loading it', () => {
    expect(() => loadUws(only({ glibc: '9.0' }))).toThrow(
      /^uWebSockets\.js's addon for Node \d+ \(uws_linux_\w+_\d+\.node\) needs glibc >= 9\.0, this system has 2\.\d+: run Node 22 \(glibc >= 2\.27\) or Node 24 \(glibc >= 2\.38\)$/,
    );
  });

  it('gets a 32 KiB request-head limit unless the environment names a larger one', () => {
    const unset: NodeJS.ProcessEnv = {};
    setRequestHeadLimit(unset);
    expect(unset.UWS_HTTP_MAX_HEADERS_SIZE).toBe(String(MAX_REQUEST_HEAD_BYTES));
    const larger: NodeJS.ProcessEnv = { UWS_HTTP_MAX_HEADERS_SIZE: '65536' };
    setRequestHeadLimit(larger);
    expect(larger.UWS_HTTP_MAX_HEADERS_SIZE).toBe('65536');
    expect(() => setRequestHeadLimit({ UWS_HTTP_MAX_HEADERS_SIZE: '4096' })).toThrow(
      'UWS_HTTP_MAX_HEADERS_SIZE=4096 is below the 32768 bytes the verifier needs',
    );
  });
});

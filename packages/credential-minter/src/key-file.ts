// A parent key read from a file that only its owner may read, re-read when the file changes so
// a key rotates without a restart. The file is stat'ed at most once a second on the mint path
// (one cheap system call), and read only when its identity, size or mtime moved. Neither the
// key nor any part of the file ever appears in an error message; the path and the field do.

import { readFileSync, statSync, type Stats } from 'node:fs';
import { MintError } from './mint-error.js';

/** How often, at most, the mint path looks at the file (milliseconds, an adapter's unit). */
const checkEveryMs = 1000;

export interface KeyFile<T> {
  /** The current key; throws MintError('key_unavailable') when the changed file is unusable. */
  current(): T;
}

/**
 * Reads and parses the file now (a problem throws a TypeError naming `field`, for the start), then
 * watches it cheaply. `parse` gets the file's bytes and throws a TypeError (without key material)
 * when they are not a key of the expected kind.
 */
export function createKeyFile<T>(
  path: string,
  field: string,
  parse: (bytes: Buffer) => T,
  clock: () => number = Date.now,
): KeyFile<T> {
  let stamp = '';
  let key: T;
  let checkedAt = clock();
  let broken: string | undefined;

  const load = (): void => {
    const stats = statPrivate(path, field);
    const next = stampOf(stats);
    if (next === stamp) return;
    let bytes: Buffer;
    try {
      bytes = readFileSync(path);
    } catch {
      throw new TypeError(`"${field}" (${path}) cannot be read`);
    }
    try {
      key = parse(bytes);
    } finally {
      bytes.fill(0);
    }
    stamp = next;
  };
  load();

  return {
    current() {
      const now = clock();
      if (now - checkedAt >= checkEveryMs || broken !== undefined) {
        checkedAt = now;
        try {
          load();
          broken = undefined;
        } catch (error) {
          broken = error instanceof TypeError ? error.message : `"${field}" could not be read`;
        }
      }
      if (broken !== undefined) throw new MintError('key_unavailable', broken);
      return key;
    },
  };
}

function statPrivate(path: string, field: string): Stats {
  let stats: Stats | undefined;
  try {
    stats = statSync(path, { throwIfNoEntry: false });
  } catch {
    throw new TypeError(`"${field}" (${path}) cannot be read`);
  }
  if (stats === undefined) throw new TypeError(`"${field}" (${path}) does not exist`);
  if (!stats.isFile()) throw new TypeError(`"${field}" (${path}) is not a file`);
  if ((stats.mode & 0o077) !== 0) {
    const mode = (stats.mode & 0o777).toString(8).padStart(3, '0');
    throw new TypeError(
      `"${field}" (${path}) is open to group or others (mode ${mode}); a key file must be 600 or 400`,
    );
  }
  return stats;
}

function stampOf(stats: Stats): string {
  return `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeMs}`;
}

/** A text secret (API key, HMAC secret): the file's content without surrounding whitespace. */
export function parseTextSecret(field: string): (bytes: Buffer) => string {
  return (bytes) => {
    const text = bytes.toString('utf8').trim();
    if (text.length === 0) throw new TypeError(`"${field}" is empty`);
    return text;
  };
}

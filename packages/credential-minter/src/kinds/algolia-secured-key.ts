// `algolia-secured-key`: base64( hex HMAC-SHA256(parent key, restrictions) ‖ restrictions ), the
// restrictions a query string in sorted key order, values percent-encoded and lists joined with
// commas (as `algoliasearch`'s `generateSecuredApiKey` writes it). Algolia recomputes the HMAC
// with the parent key, so the key works without any call to Algolia and lapses at `validUntil`.

import { createHmac } from 'node:crypto';
import type { EntryOf } from '../entry-schema.js';
import { createKeyFile, parseTextSecret } from '../key-file.js';
import { expiryFor } from '../lifetime.js';
import { compileTemplate } from '../template.js';
import { syncMint } from '../sync-mint.js';
import type { Minter } from '../types.js';

export function createAlgoliaMinter(entry: EntryOf<'algolia-secured-key'>): Minter {
  const parentKey = createKeyFile(
    entry.parentKeyFile,
    'parentKeyFile',
    parseTextSecret('parentKeyFile'),
  );
  const filters =
    entry.filters === undefined ? undefined : compileTemplate(entry.filters, 'filters');
  const userToken = compileTemplate(entry.userToken, 'userToken');
  const { restrictIndices, restrictSources } = entry;
  return {
    kind: 'algolia-secured-key',
    mint: syncMint((caller, now) => {
      const key = parentKey.current();
      const validUntil = expiryFor(caller, now, entry.ttlSeconds);
      // Sorted by name, as Algolia's SDK serialises them.
      const restrictions = serialize([
        ['filters', filters?.(caller)],
        ['restrictIndices', restrictIndices?.join(',')],
        ['restrictSources', restrictSources],
        ['userToken', userToken(caller)],
        ['validUntil', String(validUntil)],
      ]);
      const hmac = createHmac('sha256', key).update(restrictions).digest('hex');
      return { value: Buffer.from(hmac + restrictions).toString('base64'), expiresAt: validUntil };
    }),
  };
}

function serialize(pairs: readonly (readonly [string, string | undefined])[]): string {
  return pairs
    .filter((pair): pair is readonly [string, string] => pair[1] !== undefined)
    .map(([name, value]) => `${name}=${encodeURIComponent(value)}`)
    .join('&');
}

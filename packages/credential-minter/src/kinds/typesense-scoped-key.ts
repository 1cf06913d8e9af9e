// `typesense-scoped-key`: base64( base64 HMAC-SHA256(parent key, params JSON) ‖ the parent key's
// first 4 characters ‖ params JSON ), as `typesense`'s `generateScopedSearchKey` builds it. The
// embedded `filter_by` is enforced by Typesense over whatever the browser asks; `expires_at`
// ends the key (Typesense also caps it at the parent key's own expiry).

import { createHmac } from 'node:crypto';
import type { EntryOf } from '../entry-schema.js';
import { createKeyFile, parseTextSecret } from '../key-file.js';
import { expiryFor } from '../lifetime.js';
import { compileJsonTemplate, compileTemplate } from '../template.js';
import { syncMint } from '../sync-mint.js';
import type { Minter } from '../types.js';

export function createTypesenseMinter(entry: EntryOf<'typesense-scoped-key'>): Minter {
  if (entry.params !== undefined && ('filter_by' in entry.params || 'expires_at' in entry.params)) {
    throw new TypeError(
      '"params" may not set "filter_by" or "expires_at"; use "filterBy" and "ttlSeconds"',
    );
  }
  const parentKey = createKeyFile(entry.parentKeyFile, 'parentKeyFile', (bytes) => {
    const key = parseTextSecret('parentKeyFile')(bytes);
    if (key.length < 4) throw new TypeError('"parentKeyFile" holds too short a key');
    return key;
  });
  const filterBy =
    entry.filterBy === undefined ? undefined : compileTemplate(entry.filterBy, 'filterBy');
  const params =
    entry.params === undefined ? undefined : compileJsonTemplate(entry.params, 'params');
  return {
    kind: 'typesense-scoped-key',
    mint: syncMint((caller, now) => {
      const key = parentKey.current();
      const expiresAt = expiryFor(caller, now, entry.ttlSeconds);
      const embedded = JSON.stringify({
        filter_by: filterBy?.(caller),
        ...(params?.(caller) as Record<string, unknown> | undefined),
        expires_at: expiresAt,
      });
      const digest = createHmac('sha256', key).update(embedded).digest('base64');
      return {
        value: Buffer.from(digest + key.slice(0, 4) + embedded).toString('base64'),
        expiresAt,
      };
    }),
  };
}

// `meilisearch-tenant-token`: a JWT HS256-signed with the parent API key, claims `searchRules`
// (index → filter, applied by Meilisearch on every search), `apiKeyUid` (which key signed) and
// `exp`, in the order `meilisearch`'s `generateTenantToken` writes them.

import type { EntryOf } from '../entry-schema.js';
import { hmacKey, signJwt } from '../jws-key.js';
import { createKeyFile, parseTextSecret } from '../key-file.js';
import { expiryFor } from '../lifetime.js';
import { compileJsonTemplate } from '../template.js';
import { syncMint } from '../sync-mint.js';
import type { Minter } from '../types.js';

export function createMeilisearchMinter(entry: EntryOf<'meilisearch-tenant-token'>): Minter {
  const apiKey = createKeyFile(entry.apiKeyFile, 'apiKeyFile', (bytes) =>
    hmacKey(parseTextSecret('apiKeyFile')(bytes)),
  );
  const searchRules = compileJsonTemplate(entry.searchRules, 'searchRules');
  const { apiKeyUid } = entry;
  return {
    kind: 'meilisearch-tenant-token',
    mint: syncMint((caller, now) => {
      const key = apiKey.current();
      const exp = expiryFor(caller, now, entry.ttlSeconds);
      const value = signJwt(key, { searchRules: searchRules(caller), apiKeyUid, exp });
      return { value, expiresAt: exp };
    }),
  };
}

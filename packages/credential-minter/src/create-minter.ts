// Picks the kind's factory for a parsed entry. Each factory checks what it can at start (key files
// present, private and holding a usable key; templates naming known placeholders) and returns a
// Minter whose `mint` is the per-request path.

import { mintEntrySchema, type MintEntry } from './entry-schema.js';
import { createAlgoliaMinter } from './kinds/algolia-secured-key.js';
import { createJwtMinter } from './kinds/jwt.js';
import { createLiveKitMinter } from './kinds/livekit-token.js';
import { createMeilisearchMinter } from './kinds/meilisearch-tenant-token.js';
import { createS3Minter } from './kinds/s3-presigned-url.js';
import { createStreamChatMinter } from './kinds/stream-chat-token.js';
import { createTokenExchangeMinter } from './kinds/token-exchange.js';
import { createTypesenseMinter } from './kinds/typesense-scoped-key.js';
import type { MintContext, Minter } from './types.js';

/**
 * A Minter for one entry. The entry is (re)parsed with `mintEntrySchema`, so defaults are filled
 * and an unparsed object is checked; a bad entry, an unknown kind or an unusable key file throws
 * a TypeError whose message names the field (never a key's content).
 */
export function createMinter(entry: MintEntry, context: MintContext = {}): Minter {
  const parsed = mintEntrySchema.safeParse(entry);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const field = issue.path.join('.');
      return field === '' ? issue.message : `"${field}": ${issue.message}`;
    });
    throw new TypeError(`mint entry: ${problems.join('; ')}`);
  }
  const checked = parsed.data;
  switch (checked.kind) {
    case 'jwt':
      return createJwtMinter(checked);
    case 'stream-chat-token':
      return createStreamChatMinter(checked);
    case 'livekit-token':
      return createLiveKitMinter(checked);
    case 'algolia-secured-key':
      return createAlgoliaMinter(checked);
    case 'typesense-scoped-key':
      return createTypesenseMinter(checked);
    case 'meilisearch-tenant-token':
      return createMeilisearchMinter(checked);
    case 's3-presigned-url':
      return createS3Minter(checked);
    case 'token-exchange':
      return createTokenExchangeMinter(checked, context);
  }
}

// Picks the kind's factory for a parsed entry. Each factory checks what it can at start (key files
// present and private) and returns a Minter whose `mint` is the per-request path.

import type { MintEntry } from './entry-schema.js';
import type { MintContext, Minter } from './types.js';

/**
 * A Minter for one entry. The entry is parsed with `mintEntrySchema` first (an unparsed object is
 * parsed here); a bad entry or an unreadable key file throws a TypeError naming the field.
 */
export function createMinter(entry: MintEntry, context: MintContext = {}): Minter {
  void context;
  throw new TypeError(`mint kind "${entry.kind}" is not available yet`);
}

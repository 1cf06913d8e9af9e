// @secret-gate/credential-minter: per-user, short-lived credentials minted for a verified caller.
// One entry (validated by `mintEntrySchema`) gives one `Minter`; parent keys are read from files
// whose mode is checked and re-read when they change. The host caches and delivers the values.

export type { Caller, MintContext, MintedValue, Minter } from './types.js';
export { MintError, type MintErrorCode } from './mint-error.js';
export {
  defaultTtlSeconds,
  mintEntrySchema,
  mintKinds,
  type MintEntry,
  type MintEntryInput,
  type MintKind,
} from './entry-schema.js';
export { createMinter } from './create-minter.js';

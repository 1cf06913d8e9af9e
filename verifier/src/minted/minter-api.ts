// The minting kinds (packages/credential-minter), the one file the verifier imports them through.
export {
  createMinter,
  defaultTtlSeconds,
  MintError,
  mintEntrySchema,
  type Caller,
  type MintContext,
  type MintedValue,
  type MintEntry,
  type Minter,
} from '@secret-gate/credential-minter';

import type { Minter } from '@secret-gate/credential-minter';
/** A public key of a gate-signed value, as `Minter.publicJwks()` gives it. */
export type PublicJwk = ReturnType<NonNullable<Minter['publicJwks']>>[number];

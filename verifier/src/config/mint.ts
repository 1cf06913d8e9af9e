// A policy's `mint` section: the values minted per request for the verified caller, by value name
// (docs/minted/README.md). Each entry is the minting package's own schema; then each minter is
// built once at start, so a missing or open key file stops `--check-config` naming the set's value.
import { z } from 'zod';
import { createMinter, mintEntrySchema, type MintEntry } from '@secret-gate/credential-minter';
import { Deferred } from './values.js';

/**
 * A value name as the SPA reads it beside the static values; `expires_at` is the answer's own
 * member (each minted value's expiry), so no value may take it.
 */
const NAME_RULE =
  'value names use A-Z a-z 0-9 _ - only (at most 64) and are not "expires_at" (the answer\'s expiry member)';
const valueName = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/)
  .refine((name) => name !== 'expires_at');

/**
 * What the start check builds each minter with: a `token-exchange` value learns its issuer's token
 * endpoint from discovery only when it mints (service.ts), so the check gives it one that is never
 * called, and still catches its missing or open client key file.
 */
const CHECK_CONTEXT = {
  tokenEndpoint: () => Promise.reject(new Error('the start check does not exchange tokens')),
};

/** The loaded section: value name → its checked entry. */
export type MintSection = Readonly<Record<string, MintEntry>>;

export const mintSection = z
  .record(valueName, mintEntrySchema, {
    error: (issue) => (issue.code === 'invalid_key' ? NAME_RULE : undefined),
  })
  .refine((entries) => Object.keys(entries).length > 0, 'name at least one value to mint')
  .transform(
    (entries) =>
      new Deferred((_io, fail): MintSection => {
        for (const [name, entry] of Object.entries(entries))
          try {
            createMinter(entry, CHECK_CONTEXT);
          } catch (error) {
            fail((error as Error).message, [name]);
          }
        return entries;
      }),
  )
  .describe(
    'Values minted per request for the verified caller, by name (`"search-key": { "kind": "algolia-secured-key", … }`): delivered with the set\'s static values and their expiry in `expires_at` (docs/minted/README.md). Parent keys are read from files only.',
  );

// The one error a mint throws at request time. Messages name the field or the IdP's error code,
// never a key, a token or a minted value.

export type MintErrorCode =
  'claim_missing' | 'exchange_refused' | 'exchange_failed' | 'key_unavailable';

export class MintError extends Error {
  override readonly name = 'MintError';
  constructor(
    readonly code: MintErrorCode,
    message: string,
  ) {
    super(message);
  }
}

// Why a logout token or SET was refused: a closed union (metric labels, logs) and the one error
// class both receivers throw. Descriptions name the field and never echo the token.

export type RefusalReason =
  | 'request_invalid'
  | 'token_malformed'
  | 'issuer_unknown'
  | 'typ_mismatch'
  | 'alg_not_allowed'
  | 'key_unknown'
  | 'keys_unavailable'
  | 'signature_invalid'
  | 'audience_mismatch'
  | 'claim_invalid'
  | 'token_expired'
  | 'events_invalid'
  | 'nonce_present'
  | 'subject_missing'
  | 'sub_present'
  | 'exp_present'
  | 'jti_replayed'
  | 'store_unavailable';

export class ReceiverError extends Error {
  override readonly name = 'ReceiverError';
  constructor(
    readonly reason: RefusalReason,
    message: string,
  ) {
    super(message);
  }
}

/** RFC 8935 §2.3 / RFC 8936 error codes (the SET delivery error registry). */
export type SetDeliveryError =
  | 'invalid_request'
  | 'invalid_key'
  | 'invalid_issuer'
  | 'invalid_audience'
  | 'authentication_failed'
  | 'access_denied';

export function setDeliveryError(reason: RefusalReason): SetDeliveryError {
  switch (reason) {
    case 'issuer_unknown':
      return 'invalid_issuer';
    case 'audience_mismatch':
      return 'invalid_audience';
    case 'key_unknown':
    case 'signature_invalid':
    case 'alg_not_allowed':
      return 'invalid_key';
    default:
      return 'invalid_request';
  }
}

// WebCrypto returns ECDSA signatures as raw r‖s (IEEE P1363); CloudFront wants the ASN.1 DER
// `SEQUENCE { INTEGER r, INTEGER s }` that OpenSSL writes. P-256 only, so every length fits in
// one byte and no long-form DER lengths are needed.

const P256_HALF = 32;

/** Converts a 64-byte P-256 r‖s signature into DER. */
export function p1363ToDer(raw: Uint8Array): Uint8Array {
  if (raw.length !== 2 * P256_HALF)
    throw new TypeError(
      `expected a ${2 * P256_HALF}-byte P-256 signature, got ${raw.length} bytes`,
    );
  const r = derInteger(raw.subarray(0, P256_HALF));
  const s = derInteger(raw.subarray(P256_HALF));
  const out = new Uint8Array(2 + r.length + s.length);
  out[0] = 0x30;
  out[1] = r.length + s.length;
  out.set(r, 2);
  out.set(s, 2 + r.length);
  return out;
}

/** A minimal positive DER INTEGER: leading zeros dropped, a 0x00 added when the top bit is set. */
function derInteger(unsigned: Uint8Array): Uint8Array {
  let start = 0;
  while (start < unsigned.length - 1 && unsigned[start] === 0) start++;
  const body = unsigned.subarray(start);
  const pad = (body[0] ?? 0) & 0x80 ? 1 : 0;
  const out = new Uint8Array(2 + pad + body.length);
  out[0] = 0x02;
  out[1] = pad + body.length;
  out.set(body, 2 + pad);
  return out;
}

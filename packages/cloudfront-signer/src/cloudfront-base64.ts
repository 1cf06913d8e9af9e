// CloudFront's own base64 alphabet for policies and signatures.
// It is neither RFC 4648 base64 nor base64url: `+`, `=` and `/` become `-`, `_` and `~`, and the
// padding is kept (as `_`). Reference: CloudFront Developer Guide, "Create a URL signature".

const replacements: Readonly<Record<string, string>> = { '+': '-', '=': '_', '/': '~' };
const unsafe = /[+=/]/g;

/** Encodes bytes (or a UTF-8 string) in CloudFront's URL-safe base64. */
export function toCloudFrontBase64(value: Uint8Array | string): string {
  const bytes =
    typeof value === 'string'
      ? Buffer.from(value, 'utf8')
      : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  return bytes.toString('base64').replace(unsafe, (c) => replacements[c] ?? c);
}

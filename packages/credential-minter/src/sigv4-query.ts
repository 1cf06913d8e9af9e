// AWS Signature V4 in the query string, the form of an S3 presigned URL. Written out rather than
// through `aws4`: aws4 parses the path and query back out of a string, re-encodes and re-sorts
// them on every call, which cost ~80 µs a mint; here the fixed parts of the canonical request are
// built once and the day's signing key (four chained HMACs) is derived once per day and secret.
// https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html

import { createHash, createHmac } from 'node:crypto';

export interface SigV4Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

export interface SigV4Scope {
  readonly method: string;
  /** The Host header the URL will be sent with (port included when not the scheme's default). */
  readonly host: string;
  readonly region: string;
  readonly service: string;
}

export interface QueryToSign {
  /** The canonical (already encoded) URI path. */
  readonly path: string;
  /**
   * Extra query parameters, names and values already RFC 3986-encoded, in code-point order of
   * name, each name sorting after `X-Amz-SignedHeaders` (lowercase names do, like `x-id`).
   */
  readonly extra: readonly (readonly [string, string])[];
  /** Signing time, epoch seconds. */
  readonly issuedAt: number;
  readonly expiresSeconds: number;
}

/**
 * A signer for one (method, host, region, service). `sign` returns the path with its full query,
 * `X-Amz-Signature` included, in code-point order of parameter names as the AWS SDK writes it.
 * The signing key is kept for the last (secret, day) seen: a rotated credentials file or a new
 * UTC day derives a new one.
 */
export function createSigV4QuerySigner(scope: SigV4Scope) {
  const { method, host, region, service } = scope;
  const scopeTail = `/${region}/${service}/aws4_request`;
  const canonicalTail = `host:${host}\n\nhost\nUNSIGNED-PAYLOAD`;
  let keyFor: { secret: string; day: string; key: Buffer } | undefined;

  const signingKey = (secret: string, day: string): Buffer => {
    if (keyFor?.secret === secret && keyFor.day === day) return keyFor.key;
    let key = hmac(`AWS4${secret}`, day);
    for (const part of [region, service, 'aws4_request']) key = hmac(key, part);
    keyFor = { secret, day, key };
    return key;
  };

  return function sign(credentials: SigV4Credentials, query: QueryToSign): string {
    const amzDate = new Date(query.issuedAt * 1000).toISOString().replace(/[:-]|\.\d{3}/g, '');
    const day = amzDate.slice(0, 8);
    const credentialScope = `${day}${scopeTail}`;
    // Every X-Amz-* name sorts before a lowercase one; X-Amz-Signature joins after signing,
    // between X-Amz-Expires and X-Amz-SignedHeaders.
    const head =
      `X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Content-Sha256=UNSIGNED-PAYLOAD` +
      `&X-Amz-Credential=${rfc3986(`${credentials.accessKeyId}/${credentialScope}`)}` +
      `&X-Amz-Date=${amzDate}&X-Amz-Expires=${query.expiresSeconds}`;
    let tail = '&X-Amz-SignedHeaders=host';
    for (const [name, value] of query.extra) tail += `&${name}=${value}`;
    const canonical = `${method}\n${query.path}\n${head}${tail}\n${canonicalTail}`;
    const stringToSign = `AWS4-HMAC-SHA256\n${amzDate}\n${credentialScope}\n${createHash('sha256').update(canonical).digest('hex')}`;
    const signature = createHmac('sha256', signingKey(credentials.secretAccessKey, day))
      .update(stringToSign)
      .digest('hex');
    return `${query.path}?${head}&X-Amz-Signature=${signature}${tail}`;
  };
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data).digest();
}

/** RFC 3986 percent-encoding of one query component, as SigV4's canonical query wants it. */
export function rfc3986(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

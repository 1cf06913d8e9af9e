// `s3-presigned-url`: a SigV4 query-signed GET or PUT URL for one object whose key is templated
// by the caller ("uploads/{sub}/avatar.png"), signed as the AWS SDK's presigner signs it; any
// S3-compatible store (MinIO, R2, Ceph) checks it with the same credentials. The store refuses it
// after `X-Amz-Expires`.

import type { EntryOf } from '../entry-schema.js';
import { createKeyFile } from '../key-file.js';
import { expiryFor } from '../lifetime.js';
import { MintError } from '../mint-error.js';
import { createSigV4QuerySigner, rfc3986, type SigV4Credentials } from '../sigv4-query.js';
import { compileTemplate } from '../template.js';
import { syncMint } from '../sync-mint.js';
import type { Minter } from '../types.js';

export function createS3Minter(entry: EntryOf<'s3-presigned-url'>): Minter {
  const credentials = createKeyFile(entry.credentialsFile, 'credentialsFile', parseCredentials);
  const objectKey = compileTemplate(entry.key, 'key', segment);
  const { method, bucket, region, forcePathStyle } = entry;
  const endpoint = new URL(entry.endpoint ?? `https://s3.${region}.amazonaws.com`);
  const origin = `${endpoint.protocol}//`;
  const host = forcePathStyle ? endpoint.host : `${bucket}.${endpoint.host}`;
  const prefix = `${endpoint.pathname.replace(/\/$/, '')}${forcePathStyle ? `/${encodeKey(bucket)}` : ''}/`;
  // The operation's name, as the AWS SDK adds it, so the two sign the same request.
  const extra = [['x-id', method === 'GET' ? 'GetObject' : 'PutObject']] as const;
  const sign = createSigV4QuerySigner({ method, host, region, service: 's3' });

  return {
    kind: 's3-presigned-url',
    mint: syncMint((caller, now) => {
      const issuedAt = Math.floor(now);
      const expiresAt = expiryFor(caller, now, entry.ttlSeconds);
      const path = `${prefix}${encodeKey(objectKey(caller))}`;
      const signed = sign(credentials.current(), {
        path,
        extra,
        issuedAt,
        expiresSeconds: expiresAt - issuedAt,
      });
      return { value: `${origin}${host}${signed}`, expiresAt };
    }),
  };
}

/** A value put into the key must stay one path segment: no "/", no dot segment, no control. */
function segment(value: string, name: string): string {
  if (value === '' || value === '.' || value === '..' || /[/\\]/.test(value) || hasControl(value)) {
    throw new MintError('claim_missing', `"{${name}}" is not usable in an object key`);
  }
  return value;
}

function hasControl(value: string): boolean {
  for (let i = 0; i < value.length; i += 1) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

/** RFC 3986 encoding of each segment, as S3's SigV4 canonical URI wants it ("/" kept). */
function encodeKey(key: string): string {
  return key.split('/').map(rfc3986).join('/');
}

function parseCredentials(bytes: Buffer): SigV4Credentials {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new TypeError('"credentialsFile" is not JSON {"accessKeyId": …, "secretAccessKey": …}');
  }
  const { accessKeyId, secretAccessKey } = (parsed ?? {}) as Partial<Record<string, unknown>>;
  if (
    typeof accessKeyId !== 'string' ||
    accessKeyId === '' ||
    typeof secretAccessKey !== 'string' ||
    secretAccessKey === ''
  ) {
    throw new TypeError('"credentialsFile" needs string "accessKeyId" and "secretAccessKey"');
  }
  return { accessKeyId, secretAccessKey };
}

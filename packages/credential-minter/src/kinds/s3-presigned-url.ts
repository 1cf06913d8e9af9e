// `s3-presigned-url`: a SigV4 query-signed GET or PUT URL for one object whose key is templated
// by the caller ("uploads/{sub}/avatar.png"). `aws4` signs; any S3-compatible store (MinIO, R2,
// Ceph) checks it with the same credentials. The store refuses it after `X-Amz-Expires`.

import { createRequire } from 'node:module';
import type * as Aws4 from 'aws4';
import type { EntryOf } from '../entry-schema.js';
import { createKeyFile } from '../key-file.js';
import { expiryFor } from '../lifetime.js';
import { MintError } from '../mint-error.js';
import { compileTemplate } from '../template.js';
import { syncMint } from '../sync-mint.js';
import type { Minter } from '../types.js';

const requireModule = createRequire(import.meta.url);

interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

export function createS3Minter(entry: EntryOf<'s3-presigned-url'>): Minter {
  const credentials = createKeyFile(entry.credentialsFile, 'credentialsFile', parseCredentials);
  // Loaded by the first S3 entry, not with the package: a host without one never holds it.
  const aws4 = requireModule('aws4') as typeof Aws4;
  const objectKey = compileTemplate(entry.key, 'key', segment);
  const { method, bucket, region, forcePathStyle } = entry;
  const endpoint = new URL(entry.endpoint ?? `https://s3.${region}.amazonaws.com`);
  const origin = `${endpoint.protocol}//`;
  const host = forcePathStyle ? endpoint.host : `${bucket}.${endpoint.host}`;
  const prefix = `${endpoint.pathname.replace(/\/$/, '')}${forcePathStyle ? `/${encodeKey(bucket)}` : ''}/`;
  // The operation's name, as the AWS SDK adds it, so the two sign the same request.
  const operation = method === 'GET' ? 'GetObject' : 'PutObject';

  return {
    kind: 's3-presigned-url',
    mint: syncMint((caller, now) => {
      const { accessKeyId, secretAccessKey } = credentials.current();
      const issuedAt = Math.floor(now);
      const expiresAt = expiryFor(caller, now, entry.ttlSeconds);
      const date = new Date(issuedAt * 1000).toISOString().replace(/[:-]|\.\d{3}/g, '');
      const query =
        `X-Amz-Content-Sha256=UNSIGNED-PAYLOAD&X-Amz-Date=${date}` +
        `&X-Amz-Expires=${expiresAt - issuedAt}&x-id=${operation}`;
      const signed = aws4.sign(
        {
          host,
          method,
          path: `${prefix}${encodeKey(objectKey(caller))}?${query}`,
          service: 's3',
          region,
          signQuery: true,
        },
        { accessKeyId, secretAccessKey },
      );
      return { value: `${origin}${host}${sortQuery(signed.path ?? '')}`, expiresAt };
    }),
  };
}

/** Query parameters in code-point order of their names, as the AWS SDK writes a presigned URL. */
function sortQuery(path: string): string {
  const at = path.indexOf('?');
  if (at < 0) return path;
  const pairs = path.slice(at + 1).split('&');
  pairs.sort((a, b) => {
    const x = a.slice(0, a.indexOf('='));
    const y = b.slice(0, b.indexOf('='));
    return x < y ? -1 : x > y ? 1 : 0;
  });
  return `${path.slice(0, at)}?${pairs.join('&')}`;
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
  return key
    .split('/')
    .map((part) =>
      encodeURIComponent(part).replace(
        /[!'()*]/g,
        (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
      ),
    )
    .join('/');
}

function parseCredentials(bytes: Buffer): Credentials {
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

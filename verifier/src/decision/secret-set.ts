// The name of the secret set NGINX serves for an allow: an opaque digest of (issuer, client id),
// so NGINX picks the set's file without knowing either and no claim can ever name a path. The
// same derivation writes the files (nginx/njs/secret-sets.js); test/nginx checks they agree.
import { createHash } from 'node:crypto';

/**
 * `c` + the first 32 hex digits of SHA-256(`issuer` LF `client`). Client ids are unique only
 * within one issuer, so the issuer is part of the name: equal ids of two issuers never share a set.
 * Undefined without a client id (NGINX then serves the default set).
 */
export function secretSetName(issuer: string, client: string): string | undefined {
  if (client === '') return undefined;
  return `c${createHash('sha256').update(`${issuer}\n${client}`).digest('hex').slice(0, 32)}`;
}

// NGINX's proof that a call came through it: a shared key in `X-SG-Edge-Key` (contract.ts), set
// by the internal /_verify location and the receivers' locations. Whoever else reaches a TCP
// listener (another process on the host, another container on the network) cannot name the
// client the call limit counts, nor push revocation events around NGINX's own limits.
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { UNKNOWN_CALLER } from '../refusals.js';
import type { VerifyAnswer } from './verify-answer.js';

/** /verify's refusal of a caller without the key: no challenge, never stored at the edge. */
export const CALLER_UNKNOWN: VerifyAnswer = { status: 401, headers: [['X-Accel-Expires', '0']] };
/** A receiver's refusal of the same (a JSON body: refusals.ts). */
export const CALLER_UNKNOWN_BODY = UNKNOWN_CALLER;

const digest = (value: string): Buffer => hash('sha256', value, 'buffer');

/**
 * `isEdge(presented)`: true when `presented` is the key. Both sides are hashed first, so the
 * comparison is of equal lengths and in constant time whatever was sent; the key is kept only as
 * its digest.
 */
export function createEdgeCheck(key: string): (presented: string) => boolean {
  const expected = digest(key);
  return function isEdge(presented) {
    return timingSafeEqual(digest(presented), expected);
  };
}

/**
 * Writes a fresh key (32 random bytes, hex) to `path` unless a file is there already, which is
 * kept so that NGINX and a restarted verifier keep agreeing. Mode 0640: NGINX reads it through
 * the group (docker-compose.yaml's `group_add`). The key is never printed.
 */
export function createEdgeKeyFile(path: string): 'created' | 'kept' {
  try {
    writeFileSync(path, `${randomBytes(32).toString('hex')}\n`, { flag: 'wx', mode: 0o640 });
    return 'created';
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return 'kept';
    throw error;
  }
}

// pino JSON logs. Tokens are never logged: a fingerprint (first 8 hex chars of the token's SHA-256)
// is enough to correlate a denial with a client report without making the log a credential store.
import { createHash } from 'node:crypto';
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: { service: 'secret-gate-verifier' },
      // Belt and braces: if an Authorization header ever lands in a log object, it is censored.
      redact: { paths: ['authorization', '*.authorization', 'token', '*.token'], censor: '[redacted]' },
    },
    destination ?? pino.destination({ sync: false }),
  );
}

/** SHA-256 of the token as base64url (43 chars, shorter than hex in 100,000 cache keys). */
export function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}

/** The first 8 hex characters of the token's SHA-256, from `tokenHash`'s output. */
export function fingerprint(hash: string): string {
  return Buffer.from(hash.slice(0, 8), 'base64url').toString('hex', 0, 4);
}

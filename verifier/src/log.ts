// pino JSON logs. Tokens are never logged: a fingerprint (decision/authorize.ts) is enough to
// correlate a denial with a client report without making the log a credential store.
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: { service: 'secret-gate-verifier' },
      // Belt and braces: if an Authorization header ever lands in a log object, it is censored.
      redact: {
        paths: ['authorization', '*.authorization', 'token', '*.token'],
        censor: '[redacted]',
      },
    },
    destination ?? pino.destination({ sync: false }),
  );
}

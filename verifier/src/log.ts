// pino JSON logs. Tokens are never logged: a fingerprint (decision/authorize.ts) is enough to
// correlate a denial with a client report without making the log a credential store.
import { pino, type Logger } from 'pino';
import { redact } from './config/redact.js';
import { logTraceId } from './tracing/log-trace.js';

export type { Logger };

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: { service: 'secret-gate-verifier' },
      // The request's trace id on every line written while deciding it (tracing/log-trace.ts).
      mixin: logTraceId,
      // Belt and braces: if an Authorization header ever lands in a log object, it is censored.
      redact: {
        paths: ['authorization', '*.authorization', 'token', '*.token'],
        censor: '[redacted]',
      },
      // Every secret setting's value and every URL's userinfo, whatever field carries them.
      hooks: { streamWrite: redact },
    },
    destination ?? pino.destination({ sync: false }),
  );
}

// CLIENT spans for the shared stores' Redis commands (a DPoP proof's replay `SET`, a revocation
// write), from the `ioredis:command` tracing channel ioredis publishes on diagnostics_channel: no
// patching, and ioredis builds a command's trace context only while someone listens, so without
// OTEL_* (this module not loaded) a command costs what it did.
import { tracingChannel } from 'node:diagnostics_channel';
import { SpanKind, type Tracer } from '@opentelemetry/api';
import { recordChannel } from './channel-spans.js';

/** What ioredis publishes per command (its `CommandTraceContext`), as far as it is read here. */
interface RedisCommand {
  readonly command: string;
  readonly database: number;
  readonly serverAddress: string;
  readonly serverPort: number | undefined;
  readonly error?: unknown;
}

/**
 * Starts recording; returns the function that stops it. Only the command's name, the database
 * number and the server are recorded, never its arguments: keys name a `jti`, a proof key's
 * thumbprint or a subject's watermark (`sg:dpop:…`, `sg:rev:…`), so ioredis's own sanitised
 * argument list is ignored too.
 */
export function recordRedisCalls(tracer: Tracer): () => void {
  return recordChannel(tracingChannel<unknown, RedisCommand>('ioredis:command'), (command) => {
    const name = command.command.toUpperCase();
    return tracer.startSpan(name, {
      kind: SpanKind.CLIENT,
      attributes: {
        'db.system.name': 'redis',
        'db.operation.name': name,
        'db.namespace': String(command.database),
        'server.address': command.serverAddress,
        ...(command.serverPort === undefined ? {} : { 'server.port': command.serverPort }),
      },
    });
  });
}

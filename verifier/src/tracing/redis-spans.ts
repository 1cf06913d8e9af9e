// CLIENT spans for the shared stores' Redis commands (a DPoP proof's replay `SET`, a revocation
// write), from the `ioredis:command` tracing channel ioredis publishes on diagnostics_channel: no
// patching, and ioredis builds a command's trace context only while someone listens, so without
// OTEL_* (this module not loaded) a command costs what it did.
import { tracingChannel } from 'node:diagnostics_channel';
import {
  context,
  SpanKind,
  SpanStatusCode,
  trace,
  type Span,
  type Tracer,
} from '@opentelemetry/api';

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
  const spans = new WeakMap<object, Span>();
  const channel = tracingChannel<unknown, RedisCommand>('ioredis:command');
  const handlers = {
    start(command: RedisCommand) {
      // Only inside a request's trace: a background reload or heartbeat is no one's child.
      if (trace.getSpan(context.active()) === undefined) return;
      const name = command.command.toUpperCase();
      spans.set(
        command,
        tracer.startSpan(name, {
          kind: SpanKind.CLIENT,
          attributes: {
            'db.system.name': 'redis',
            'db.operation.name': name,
            'db.namespace': String(command.database),
            'server.address': command.serverAddress,
            ...(command.serverPort === undefined ? {} : { 'server.port': command.serverPort }),
          },
        }),
      );
    },
    end: () => undefined,
    asyncStart: () => undefined,
    error(command: RedisCommand) {
      const error = command.error;
      // The error's class only: a Redis error message may quote the command's arguments.
      spans.get(command)?.setStatus({
        code: SpanStatusCode.ERROR,
        message: error instanceof Error ? error.name : 'Error',
      });
    },
    asyncEnd(command: RedisCommand) {
      spans.get(command)?.end();
      spans.delete(command);
    },
  };
  channel.subscribe(handlers);
  return () => channel.unsubscribe(handlers);
}

// Builds an in-process verifier for tests from env-style settings, with a manual clock and a
// captured log.
import type { Clock } from '../clock.js';
import { loadConfig } from '../config/load.js';
import { createVerifierService, type VerifierService } from '../service.js';
import type { Tracing } from '../tracing/otel.js';
import { captureLogger } from './fixtures.js';

export interface TestService {
  readonly service: VerifierService;
  readonly lines: string[];
}

export function buildService(
  env: Record<string, string>,
  options: {
    now?: Clock;
    file?: unknown;
    files?: Readonly<Record<string, string>>;
    tracing?: Tracing;
  } = {},
): TestService {
  const config = loadConfig(
    {
      ...env,
      ...(options.file === undefined ? {} : { VERIFIER_CONFIG: '/test/config.json' }),
    },
    // `files`: other files the configuration names (a key file, a CA bundle), by path.
    (path) => options.files?.[path] ?? JSON.stringify(options.file),
  );
  const { logger, lines } = captureLogger('debug');
  const service = createVerifierService(config, {
    logger,
    defaultMetrics: false,
    ...(options.now ? { now: options.now } : {}),
    ...(options.tracing ? { tracing: options.tracing } : {}),
  });
  return { service, lines };
}

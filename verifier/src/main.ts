// The verifier process: read the configuration, start the service, listen, and shut down cleanly
// on SIGTERM/SIGINT. `--check-config` validates the configuration (and key files) and exits;
// `--make-edge-key` first creates VERIFIER_EDGE_KEY_FILE with a fresh key when it is missing.
// `--print-config` prints the effective configuration (secrets redacted) and exits. The file
// VERIFIER_CONFIG names is watched for changes (reloader.ts); SIGHUP reads it at once.
import { readFileSync } from 'node:fs';
import { ConfigError, loadConfig } from './config/load.js';
import type { VerifierConfig } from './config/model.js';
import { printableConfig } from './config/print.js';
import { redact } from './config/redact.js';
import { settingSources } from './config/sources.js';
import { createLogger } from './log.js';
import { storeTopologyProblem } from './redis/connection.js';
import { createConfigReloader, readConfigSource } from './reloader.js';
import { createVerifierService } from './service.js';
import { describe } from './http/transport.js';
import { createEdgeKeyFile } from './http/edge-key.js';
import { readTracingSettings, type TracingSettings } from './tracing/otel-env.js';

/** The start's warnings about a configuration that loads: the start logs them, --check-config prints them. */
function startWarnings(config: VerifierConfig): string[] {
  return config.listen.kind === 'tcp' && config.edgeKeyFile === undefined
    ? [
        'listening on TCP without VERIFIER_EDGE_KEY_FILE: any process that reaches the port names its own client for the call limit',
      ]
    : [];
}

/** Exit code for an unusable configuration (distinct from a crash). */
const EXIT_CONFIG = 2;
/** SIGTERM to exit: in-flight requests get most of this, the rest is for flushing logs. */
const SHUTDOWN_MS = 5000;

async function main(argv: readonly string[]): Promise<void> {
  let config: VerifierConfig;
  const edgeKeyFile = process.env.VERIFIER_EDGE_KEY_FILE?.trim();
  if (argv.includes('--make-edge-key')) {
    if (!edgeKeyFile?.startsWith('/')) {
      process.stderr.write('--make-edge-key: set VERIFIER_EDGE_KEY_FILE to an absolute path\n');
      process.exit(EXIT_CONFIG);
    }
    const made = createEdgeKeyFile(edgeKeyFile);
    process.stdout.write(
      `edge key ${made === 'created' ? 'created in' : 'kept:'} ${edgeKeyFile}\n`,
    );
  }
  // The file read once: the configuration that starts is the content its digest names.
  const { source, read } = readConfigSource(process.env);
  try {
    config = loadConfig(process.env, read);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(EXIT_CONFIG);
  }
  if (argv.includes('--print-config')) {
    const sources = settingSources(process.env, (path) => readFileSync(path, 'utf8'));
    process.stdout.write(printableConfig(config, sources));
    return;
  }
  if (argv.includes('--check-config')) {
    // What the start would warn about, said here too.
    for (const line of startWarnings(config)) process.stdout.write(redact(`warning: ${line}\n`));
    process.stdout.write(
      redact(
        `configuration ok: ${config.issuers.size} issuer(s), policies ${[...config.policies.keys()].join(', ')}\n`,
      ),
    );
    return;
  }

  let traceSettings: TracingSettings | undefined;
  try {
    traceSettings = readTracingSettings(process.env);
  } catch (error) {
    process.stderr.write(`invalid verifier configuration: ${(error as Error).message}\n`);
    process.exit(EXIT_CONFIG);
  }
  // The OpenTelemetry SDK is loaded only when OTEL_* switch tracing on.
  const tracing = traceSettings && (await import('./tracing/otel.js')).startTracing(traceSettings);
  const logger = createLogger(config.logLevel);
  // A Cluster URL at a node without cluster mode (and the like) is found only by asking it.
  const topology = await storeTopologyProblem(config);
  if (topology !== undefined) {
    process.stderr.write(redact(`invalid verifier configuration: ${topology}\n`));
    process.exit(EXIT_CONFIG);
  }
  const service = createVerifierService(config, {
    logger,
    tracing: await tracing,
    configDigest: source?.digest ?? 'env',
  });
  await service.listen();
  logger.info(
    {
      listen: describe(config.listen),
      metrics: config.metricsListen === undefined ? 'on listen' : describe(config.metricsListen),
      revocation:
        service.revocation === undefined
          ? 'off'
          : [...service.routes.receivers.keys(), service.revocation.poller ? 'poll' : undefined]
              .filter(Boolean)
              .join(' '),
    },
    'verifier listening',
  );
  for (const line of startWarnings(config)) logger.warn(line);
  void service.start().then(() => {
    if (service.isReady()) logger.info('key sets loaded; ready');
    else logger.warn('some key sets did not load yet; /readyz answers 503 until they do');
  });
  // Policies and issuers follow the file; the variables are read at start only.
  const reloader =
    source &&
    createConfigReloader({ source, env: process.env, service, logger, pace: config.reload });
  reloader?.start();
  process.on('SIGHUP', () => void reloader?.check());

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: no new connections, finishing in-flight requests');
    setTimeout(() => process.exit(0), SHUTDOWN_MS).unref();
    void Promise.all([reloader?.stop(), service.stop(SHUTDOWN_MS - 1000)]).then(async () => {
      // Spans still queued go out now, within the shutdown's grace.
      await (await tracing)?.shutdown().catch(() => undefined);
      logger.info('stopped');
      logger.flush(() => process.exit(0));
    });
  };
  process.on('SIGTERM', stop).on('SIGINT', stop);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`verifier failed to start: ${(error as Error).message}\n`);
  process.exit(1);
});

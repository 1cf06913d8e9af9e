// Policies change without a restart: the file VERIFIER_CONFIG names is read again when its content
// changes (polled every `reload.poll`, and at once on SIGHUP), validated whole by the start's own loader
// (config/load.ts) and applied by the service in one swap (service.ts). A file that does not
// validate, or changes a setting only a restart applies (config/reload-plan.ts), is refused: its
// problems logged (redacted), `verifier_config_reloads_total{outcome="refused"}` counted, and the
// running configuration kept. Each replica watches its own copy of the file.
import { hash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError, loadConfig } from './config/load.js';
import type { VerifierConfig } from './config/model.js';
import type { Logger } from './log.js';
import type { VerifierService } from './service.js';

/** The `digest` label of `verifier_config_info`: the file's SHA-256, first 16 hex digits. */
export const configDigest = (text: string) => hash('sha256', text, 'hex').slice(0, 16);

/** The configuration file as read at start: the reloader compares every later read with it. */
export interface ConfigSource {
  readonly path: string;
  readonly text: string;
  readonly digest: string;
}

/**
 * The file VERIFIER_CONFIG names, read once for the start (undefined without one, or when it
 * cannot be read: loadConfig then says why), and a reader that hands loadConfig this same text,
 * so the configuration that starts is the one the digest names.
 */
export function readConfigSource(env: NodeJS.ProcessEnv): {
  source: ConfigSource | undefined;
  read: (path: string) => string;
} {
  const path = env.VERIFIER_CONFIG?.trim() || undefined;
  let source: ConfigSource | undefined;
  try {
    const text = path === undefined ? undefined : readFileSync(path, 'utf8');
    if (path !== undefined && text !== undefined)
      source = { path, text, digest: configDigest(text) };
  } catch {
    source = undefined;
  }
  const read = (at: string) =>
    source !== undefined && at === source.path ? source.text : readFileSync(at, 'utf8');
  return { source, read };
}

export interface ConfigReloaderOptions {
  readonly source: ConfigSource;
  readonly env: NodeJS.ProcessEnv;
  readonly service: Pick<VerifierService, 'reload' | 'version' | 'metrics'>;
  readonly logger: Logger;
  /** Files the configuration names (a key, a client secret), read again with each change. */
  readonly readFile?: (path: string) => string;
  /**
   * The start's `reload` settings (seconds): how often the file is read, and how far apart two
   * reads must agree before a change is taken (a write in progress is not).
   */
  readonly pace: { readonly poll: number; readonly settle: number };
}

/** Watches `source.path`; `check()` reads it now (SIGHUP), resolving once any change is handled. */
export function createConfigReloader(options: ConfigReloaderOptions) {
  const { source, env, service, logger } = options;
  const { path } = source;
  const readOther = options.readFile ?? ((at: string) => readFileSync(at, 'utf8'));
  // Timers count milliseconds; the settings, seconds.
  const settleMs = options.pace.settle * 1000;
  /** What the last read found: a digest, or why the file could not be read. */
  let seen = source.digest;
  let running: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;

  const readNow = () =>
    readFile(path, 'utf8').then(
      (text) => ({ text, key: configDigest(text) }),
      (error: NodeJS.ErrnoException) => ({ text: undefined, key: `unreadable: ${error.code}` }),
    );

  function refuse(digest: string, problems: readonly string[]) {
    service.metrics.configReload('refused');
    logger.error(
      { digest, problems, live: service.version },
      'configuration change refused; the running configuration is kept',
    );
  }

  async function apply(text: string, digest: string): Promise<void> {
    let next: VerifierConfig;
    try {
      next = loadConfig(env, (at) => (at === path ? text : readOther(at)));
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      return refuse(digest, error.problems);
    }
    const outcome = await service.reload(next, digest);
    if (!outcome.applied) return refuse(digest, outcome.problems);
    service.metrics.configReload('applied');
    logger.info(
      {
        generation: outcome.generation,
        digest,
        policies: [...next.policies.keys()],
        droppedTokens: outcome.dropped,
      },
      'configuration reloaded',
    );
  }

  /** One read; a change is handled once the file has settled. */
  async function poll(): Promise<void> {
    let read = await readNow();
    if (read.key === seen) return;
    // Read again until two reads agree: an editor writing in place may be half done.
    for (;;) {
      await sleep(settleMs);
      const again = await readNow();
      if (again.key === read.key) break;
      read = again;
    }
    seen = read.key;
    if (read.text === undefined)
      return refuse(read.key, [`VERIFIER_CONFIG: cannot read "${path}" (${read.key})`]);
    // Back to the live content (a file briefly gone, an edit undone): nothing to apply.
    if (read.key === service.version.digest) return;
    await apply(read.text, read.key);
  }

  function check(): Promise<void> {
    running ??= poll()
      .catch((error: unknown) => logger.error({ err: error }, 'configuration reload failed'))
      .finally(() => (running = undefined));
    return running;
  }

  return {
    check,
    start(): void {
      timer ??= setInterval(() => void check(), options.pace.poll * 1000).unref();
    },
    /** Stops polling; resolves once a reload under way has finished. */
    async stop(): Promise<void> {
      clearInterval(timer);
      timer = undefined;
      await running;
    },
  };
}

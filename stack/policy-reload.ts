// The operator's policy file followed while the run lives (`npm start -- --config FILE`), at the
// verifier's pace (its `reload` settings): when its content changes, the runner merges it again exactly as at start (verifier-settings.ts), checks the
// result with the verifier's own loader and the secrets file's sets, and only then replaces the
// verifier's file, which the verifier re-reads and applies in one swap (verifier/src/reloader.ts).
// Once the verifier has logged the new version, NGINX's known set names follow: the templates are
// rendered again and NGINX reloads gracefully (`nginx -s reload`). A file that fails any check is
// refused with one line per problem; the verifier's file, and so the running policies, stay.
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { configDigest } from '../verifier/src/reloader.js';
import type { PolicyFacts } from './verifier-check.js';
import { SettingsError } from './verifier-settings.js';

export interface PolicyReloadParts {
  /** The operator's policy file, as named on the command line. */
  readonly path: string;
  /** The verifier's configuration text for the policy file's current content; throws SettingsError. */
  readonly merge: () => string;
  /** The policies' facts NGINX needs, once the text passed every check; throws SettingsError. */
  readonly check: (text: string) => PolicyFacts;
  /**
   * Replaces the verifier's file (written beside it, then renamed over it) and resolves with the
   * verifier's verdict once its log says it.
   */
  readonly publish: (text: string, signal: AbortSignal) => Promise<'applied' | 'refused'>;
  /** Renders NGINX for `facts` and reloads it. */
  readonly reloadNginx: (facts: PolicyFacts) => Promise<void>;
  /** The facts the run started with, and the verifier's file it wrote. */
  readonly facts: PolicyFacts;
  readonly published: string;
  readonly log: (line: string) => void;
  /** Overrides the poll of `facts.pace` (tests that call `check()` themselves). */
  readonly pollMs?: number;
}

function digestNow(path: string): string {
  try {
    return configDigest(readFileSync(path, 'utf8'));
  } catch (error) {
    return `unreadable: ${(error as NodeJS.ErrnoException).code}`;
  }
}

const sameFacts = (a: PolicyFacts, b: PolicyFacts) =>
  a.dpopRequired === b.dpopRequired &&
  a.setNames.join(' ') === b.setNames.join(' ') &&
  a.receivers.join(' ') === b.receivers.join(' ');

/** Follows `parts.path` until `stop()`; `check()` handles a change now. */
export function watchPolicyFile(parts: PolicyReloadParts) {
  const { path, log } = parts;
  let facts = parts.facts;
  // The start's pace, as the verifier's own: a changed `reload` is refused there until a restart.
  const { poll, settle } = parts.facts.pace;
  // The content when the watch begins is the one the run was built from.
  let seen = digestNow(path);
  /** The verifier's file as last published: a change that merges to the same text is no change. */
  let published = parts.published;
  let running: Promise<void> | undefined;
  const stopping = new AbortController();
  const readNow = () =>
    readFile(path, 'utf8').then(
      (text) => configDigest(text),
      (error: NodeJS.ErrnoException) => `unreadable: ${error.code}`,
    );

  async function handle(): Promise<void> {
    let now = await readNow();
    if (now === seen) return;
    for (;;) {
      await sleep(settle * 1000);
      const again = await readNow();
      if (again === now) break;
      now = again;
    }
    seen = now;
    let text: string;
    let next: PolicyFacts;
    try {
      text = parts.merge();
      next = parts.check(text);
    } catch (error) {
      if (!(error instanceof SettingsError)) throw error;
      for (const problem of error.problems) log(`policy file change refused: ${problem}`);
      return log(`policy file change refused; the running policies are kept`);
    }
    if (text === published) return;
    const verdict = await parts.publish(text, stopping.signal);
    published = text;
    if (verdict === 'refused')
      return log(
        'the verifier refused the policy file change (its log says why); kept the running one',
      );
    log(`policies reloaded from ${path}`);
    if (sameFacts(facts, next)) return;
    await parts.reloadNginx(next);
    facts = next;
    log(`NGINX reloaded: named sets ${next.setNames.join(' ') || '(none)'}`);
  }

  function check(): Promise<void> {
    running ??= handle()
      .catch((error: unknown) => log(`policy file reload failed: ${(error as Error).message}`))
      .finally(() => (running = undefined));
    return running;
  }

  const timer = setInterval(() => void check(), parts.pollMs ?? poll * 1000).unref();
  return {
    check,
    stop(): void {
      clearInterval(timer);
      stopping.abort();
    },
  };
}

/**
 * The verifier's verdict on the file `digest` names, read from its JSON log after byte `since`:
 * the line it writes when it applies or refuses a change (verifier/src/reloader.ts).
 */
export async function verifierVerdict(
  logFile: string,
  since: number,
  digest: string,
  signal: AbortSignal,
  timeoutMs = 15_000,
): Promise<'applied' | 'refused'> {
  const deadline = Date.now() + timeoutMs;
  while (!signal.aborted && Date.now() < deadline) {
    const text = (await readFile(logFile)).subarray(since).toString('utf8');
    for (const line of text.split('\n').filter((at) => at.includes(digest))) {
      const { msg } = JSON.parse(line) as { msg?: string };
      if (msg === 'configuration reloaded') return 'applied';
      if (msg?.startsWith('configuration change refused')) return 'refused';
    }
    await sleep(100);
  }
  throw new Error(`the verifier did not take up the policy file within ${timeoutMs / 1000} s`);
}

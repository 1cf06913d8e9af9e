// Process-wide safety net for started stacks: whatever way this process ends (normal exit, an
// uncaught error, SIGINT/SIGTERM), the child process groups go with it.

interface Tracked {
  readonly stop: () => Promise<void>;
  readonly killNow: () => void;
}

const tracked = new Set<Tracked>();
let installed = false;
const GRACE_MS = 5_000;

/** Registers a stack; the first registration installs the exit and signal handlers. */
export function trackStack(entry: Tracked): void {
  tracked.add(entry);
  if (installed) return;
  installed = true;
  process.on('exit', () => {
    for (const each of tracked) each.killNow();
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => void stopAllThenReraise(signal));
  }
}

export function untrackStack(entry: Tracked): void {
  tracked.delete(entry);
}

/** Stops every stack gracefully (bounded), then lets the signal end the process as it would have. */
async function stopAllThenReraise(signal: NodeJS.Signals): Promise<void> {
  const entries = [...tracked];
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.allSettled(entries.map((each) => each.stop())),
    new Promise((resolve) => {
      timer = setTimeout(resolve, GRACE_MS);
    }),
  ]);
  clearTimeout(timer);
  for (const each of entries) each.killNow();
  // With our handler gone the default action applies: the process ends with the usual status.
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
}

// At most one log line a second per kind of refusal, so a flood of pushes cannot fill the disk:
// the line that gets through says how many of its kind were left out since the last one.
import type { Clock, EpochSeconds, Seconds } from '../clock.js';

/**
 * `pass(kind)`: undefined while a line of `kind` was written less than `intervalSeconds` ago (it is
 * counted), else the number left out since, and the line may be written. The kinds are a closed
 * set (channel × reason), so the map stays small.
 */
export function createLogThrottle(now: Clock, intervalSeconds: Seconds = 1) {
  const kinds = new Map<string, { at: EpochSeconds; suppressed: number }>();
  return function pass(kind: string): number | undefined {
    const time = now();
    const last = kinds.get(kind);
    if (last !== undefined && time - last.at < intervalSeconds) {
      last.suppressed++;
      return undefined;
    }
    kinds.set(kind, { at: time, suppressed: 0 });
    return last?.suppressed ?? 0;
  };
}

// An answer's status line and headers as the bytes uWS writes for them, built once for an answer
// many requests share (a cached allow, the call limit's refusal). uWS converts every string it is
// handed to UTF-8 on each call; one prepared buffer is one call and no conversion, so a cached
// /verify writes its whole head in one go.
import { STATUS_CODES } from 'node:http';
import type { Header } from '../decision/decision.js';

/** Status lines as uWS writes them (`204 No Content`), from node:http's reason phrases. */
const STATUS_TEXT: Readonly<Record<number, string>> = Object.fromEntries(
  Object.entries(STATUS_CODES).map(([code, reason]) => [code, `${code} ${reason}`]),
);

export const statusText = (status: number): string => STATUS_TEXT[status] ?? String(status);

/** An answer with its head prepared (`head`: not enumerable, so equality still sees plain data). */
export type WithHead<T> = T & { readonly head?: ArrayBuffer };

/**
 * `answer` with `head`: what `writeStatus` then `writeHeader` for each pair would write, as one
 * status "line" that carries the header lines after it (uWS appends `\r\n`, then its own `Date`).
 * Only for values that hold no CR or LF (they are refused as such): the bytes are the same either way.
 */
export function withHead<
  T extends { readonly status: number; readonly headers: readonly Header[] },
>(answer: T): WithHead<T> {
  const lines = [statusText(answer.status)];
  for (const [name, value] of answer.headers) {
    if (/[\r\n]/.test(name) || /[\r\n]/.test(value))
      throw new TypeError(`header ${JSON.stringify(name)} holds a line break`);
    lines.push(`${name}: ${value}`);
  }
  return Object.defineProperty(answer, 'head', {
    // An ArrayBuffer of its own: uWS reads one in place, a typed array costs it a lookup more.
    value: new TextEncoder().encode(lines.join('\r\n')).buffer,
    enumerable: false,
  });
}

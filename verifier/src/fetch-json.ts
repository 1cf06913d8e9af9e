// One way to ask an IdP for JSON: a hard timeout, a size cap counted while the body streams in,
// plain http only to loopback (unless the issuer opted in), and no redirects. A redirect from a
// JWKS or discovery URL is refused because following it would let whoever controls the redirect
// target choose the keys we trust.
import { insecureUrlProblem } from './config/values.js';

export interface FetchedJson {
  readonly status: number;
  readonly body: unknown;
  readonly headers: Headers;
}

export interface FetchJsonOptions {
  readonly timeout: number;
  readonly method?: 'GET' | 'POST';
  readonly headers?: Record<string, string>;
  readonly body?: string;
  /** The issuer's `allowHttp`: plain http to a host that is not loopback. Default false. */
  readonly allowHttp?: boolean;
}

/** Response bodies above this are refused: no JWKS, discovery or introspection answer is this big. */
const MAX_BODY_BYTES = 1024 * 1024;

/** Thrown for every transport-level failure; its message names the URL, never a credential. */
export class FetchError extends Error {
  override readonly name = 'FetchError';
}

/**
 * Fetches `url` and parses a JSON body. Non-JSON bodies of non-200 answers come back as
 * `undefined` so callers can map the status; 3xx, timeouts and oversize bodies throw.
 */
export async function fetchJson(url: string, options: FetchJsonOptions): Promise<FetchedJson> {
  // Checked here too, not only at start: discovery may hand out a URL the configuration never named.
  if (insecureUrlProblem(url, options.allowHttp === true) !== undefined)
    throw new FetchError(`${url}: plain http to a host that is not loopback refused`);
  let response: Response;
  try {
    response = await fetch(url, {
      method: options.method ?? 'GET',
      headers: { accept: 'application/json', ...options.headers },
      body: options.body,
      redirect: 'manual',
      signal: AbortSignal.timeout(options.timeout * 1000),
    });
  } catch (error) {
    const why = (error as Error).name === 'TimeoutError' ? 'timed out' : 'unreachable';
    throw new FetchError(`${url}: ${why}`);
  }
  if (response.status >= 300 && response.status < 400) {
    await response.body?.cancel();
    throw new FetchError(`${url}: redirect (${response.status}) refused`);
  }
  const declared = Number(response.headers.get('content-length') ?? 0);
  if (declared > MAX_BODY_BYTES) {
    await response.body?.cancel();
    throw new FetchError(`${url}: body larger than ${MAX_BODY_BYTES} bytes`);
  }
  const text = await readCapped(url, response);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    if (response.status === 200) throw new FetchError(`${url}: answer is not JSON`);
  }
  return { status: response.status, body, headers: response.headers };
}

/**
 * Reads the body chunk by chunk and cancels the stream as soon as it passes the cap, so a chunked
 * answer with no Content-Length (or a lying one) costs at most one chunk over the cap in memory.
 */
async function readCapped(url: string, response: Response): Promise<string> {
  const reader: ReadableStreamDefaultReader<Uint8Array> | undefined = response.body?.getReader();
  if (reader === undefined) return '';
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > MAX_BODY_BYTES) {
        await reader.cancel().catch(() => undefined);
        throw new FetchError(`${url}: body larger than ${MAX_BODY_BYTES} bytes`);
      }
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof FetchError) throw error;
    throw new FetchError(`${url}: body could not be read`);
  }
  return Buffer.concat(chunks, total).toString('utf8');
}

// One way to ask an IdP for JSON: a hard timeout, a size cap counted while the body streams in,
// plain http only to loopback (unless the issuer opted in), and no redirects: following one from a
// JWKS or discovery URL would let whoever controls its target choose the keys we trust.
import { insecureUrlProblem } from './config/values.js';

export type FetchedJson = Readonly<{ status: number; body: unknown; headers: Headers }>;

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
  const tooLarge = `body larger than ${MAX_BODY_BYTES} bytes`;
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
  const { status, headers } = response;
  const refuse = async (why: string): Promise<never> => {
    await response.body?.cancel();
    throw new FetchError(`${url}: ${why}`);
  };
  if (status >= 300 && status < 400) await refuse(`redirect (${status}) refused`);
  if (Number(headers.get('content-length') ?? 0) > MAX_BODY_BYTES) await refuse(tooLarge);
  // Counted chunk by chunk, so a chunked answer with no (or a lying) Content-Length costs at most
  // one chunk over the cap: leaving the loop cancels the stream.
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for await (const chunk of (response.body ?? []) as AsyncIterable<Uint8Array>) {
      total += chunk.byteLength;
      if (total > MAX_BODY_BYTES) break;
      chunks.push(chunk);
    }
  } catch {
    throw new FetchError(`${url}: body could not be read`);
  }
  if (total > MAX_BODY_BYTES) throw new FetchError(`${url}: ${tooLarge}`);
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    if (status === 200) throw new FetchError(`${url}: answer is not JSON`);
  }
  return { status, body, headers };
}

// Fetches the caller's secret set from the gate with the access token as a Bearer credential.
// Every outcome is a value (entries or a notice); nothing here throws or logs the token.
import { BAD_RESPONSE, NETWORK_FAILURE, describeGateFailure, type Notice } from './gate-answer.js';
import { parseSecretSet, type SecretEntry } from './secret-set.js';

export type SecretResult =
  | { readonly ok: true; readonly entries: readonly SecretEntry[] }
  | { readonly ok: false; readonly notice: Notice };

/** Creates the fetcher once for a gate path; each call is one GET that is never cached. */
export function createSecretClient(fetchFn: typeof fetch, url: URL) {
  return async function fetchSecret(accessToken: string, now: () => Date): Promise<SecretResult> {
    let response: Response;
    try {
      response = await fetchFn(url, {
        method: 'GET',
        cache: 'no-store',
        // Cookies must flow both ways: the gate sets CloudFront cookies on this response.
        credentials: 'same-origin',
        headers: { Authorization: `Bearer ${accessToken}`, Accept: 'application/json' },
      });
    } catch {
      return { ok: false, notice: NETWORK_FAILURE };
    }
    if (!response.ok) {
      // Drain the body so the connection can be reused; its text is never shown.
      await response.body?.cancel().catch(() => undefined);
      const notice = describeGateFailure(
        {
          status: response.status,
          retryAfter: response.headers.get('Retry-After'),
          wwwAuthenticate: response.headers.get('WWW-Authenticate'),
        },
        now(),
      );
      return { ok: false, notice };
    }
    let body: unknown;
    try {
      body = await response.json();
    } catch {
      return { ok: false, notice: BAD_RESPONSE };
    }
    const entries = parseSecretSet(body);
    return entries ? { ok: true, entries } : { ok: false, notice: BAD_RESPONSE };
  };
}

export type FetchSecret = ReturnType<typeof createSecretClient>;

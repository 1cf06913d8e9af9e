// The app's one gate client, built on @secret-gate/client: it sends the session's token (Bearer,
// or DPoP with a fresh proof from the page's non-extractable key), and every answer comes back as
// a value. This module turns that value into what the view shows: entries, or a notice.
import {
  createSecretGateClient,
  type CredentialsGetter,
  type SecretGateClient,
  type SetResult,
} from '@secret-gate/client';
import { describeGateError, type Notice } from './gate-answer.js';
import { entriesOf, type SecretEntry } from './secret-set.js';

export type { GateCredentials } from '@secret-gate/client';

export type SecretResult =
  | {
      readonly ok: true;
      readonly entries: readonly SecretEntry[];
      /** When the minted values will be fetched again (page clock); absent for a static set. */
      readonly renewAt?: Date;
    }
  | { readonly ok: false; readonly notice: Notice };

/** Creates the client once for the gate at `url` (`/secret`; named sets go to `/secret/<name>`). */
export function createGateClient(
  fetchFn: typeof fetch,
  url: URL,
  getCredentials: CredentialsGetter,
): SecretGateClient {
  return createSecretGateClient({ url, getCredentials, fetch: fetchFn });
}

/**
 * The view's reading of a fetch: the entries (with their expiries) or the notice to show.
 * `baseScope` is the scope the app's sign-in requests (see `describeGateError`).
 */
export function readSetResult(result: SetResult, baseScope?: string): SecretResult {
  if (!result.ok) return { ok: false, notice: describeGateError(result.error, baseScope) };
  const { renewAt } = result.set;
  return {
    ok: true,
    entries: entriesOf(result.set),
    ...(renewAt === undefined ? {} : { renewAt: new Date(renewAt * 1000) }),
  };
}

// Entry point: the only place that wires configuration, sign-in, the gate client and the view.
// The session (access token included) is a local variable of this module: memory only.
import { createAuth, isAuthorizationResponse, SignInError, type Session } from './auth.js';
import { ConfigError, loadConfig, type AppConfig } from './config.js';
import { SESSION_EXPIRED, stepUpFailed } from './gate-answer.js';
import type { PendingStepUp } from './pending-sign-in.js';
import { watchSet, type SetWatch } from '@secret-gate/client';
import { createGateClient, readSetResult, type SecretResult } from './secret-client.js';
import type { SecretEntry } from './secret-set.js';
import { clockTime, describeExpiry } from './time-text.js';
import { createView, type NoticeContent } from './view.js';

const view = createView(document);
const browserFetch: typeof fetch = (input, init) => fetch(input, init);

function signInFailure(error: unknown): NoticeContent {
  return {
    title: 'Sign-in did not complete',
    detail:
      error instanceof SignInError
        ? error.message
        : 'Something went wrong while signing in. Sign in again.',
    action: 'sign-in',
  };
}

async function copyToClipboard(entry: SecretEntry): Promise<boolean> {
  if (!navigator.clipboard) return false;
  try {
    await navigator.clipboard.writeText(entry.value);
    return true;
  } catch {
    return false;
  }
}

function run(config: AppConfig): void {
  const origin = window.location.origin;
  const auth = createAuth(config, { origin, storage: window.sessionStorage, now: Date.now });
  let session: Session | undefined;
  // `/secret` for the default set, `/secret/<name>` for a named one. Each request (renewals
  // included) takes the session's current token; none is sent once it is gone.
  const gate = createGateClient(browserFetch, new URL('/secret', origin), () => session);
  /** Keeps the shown set current: minted values are fetched again before they expire. */
  let watch: SetWatch | undefined;
  /** The set whose secrets are shown (undefined: the default set). */
  let currentSet: string | undefined;
  /** What the gate asked for in its last step-up challenge, until the person acts on it. */
  let stepUpFor: PendingStepUp | undefined;
  let expiryTicker: ReturnType<typeof setInterval> | undefined;
  let fetchedAt: Date | undefined;

  function updateExpiry(): void {
    if (!session) return;
    const now = new Date();
    if (session.expiresAt && session.expiresAt <= now) {
      // expires_in counts from when this page received the token, so no clock skew is involved:
      // the gate would answer 401 from now on, so say so before the person tries.
      forgetSession();
      view.showSignInRequired(SESSION_EXPIRED);
      return;
    }
    view.setExpiry(
      session.expiresAt ? describeExpiry(session.expiresAt, now) : 'not stated by the IdP',
    );
    view.tickExpiries(now);
  }

  function forgetSession(): void {
    session = undefined;
    watch?.stop();
    watch = undefined;
    fetchedAt = undefined;
    stepUpFor = undefined;
    clearInterval(expiryTicker);
    expiryTicker = undefined;
  }

  /**
   * Fetches the current set, then keeps its minted values renewed. `afterStepUp` is the step-up
   * this session's sign-in answered: a second challenge then ends in an error, never in another
   * redirect (RFC 9470 retries once).
   */
  function refreshSecrets(afterStepUp?: PendingStepUp): void {
    const set = currentSet;
    if (!session) return;
    watch?.stop();
    view.setBusy(true);
    view.setSecretsStatus(
      afterStepUp ? 'Fetching the secrets with your new sign-in…' : 'Fetching your secrets…',
    );
    let first = true;
    watch = watchSet(gate, {
      set,
      onResult: (result) => {
        view.setBusy(false);
        // The watch is stopped on sign-out and on a set change, so this is the current set.
        showResult(readSetResult(result, config.scope), set, first ? afterStepUp : undefined);
        first = false;
      },
    });
  }

  function showResult(
    result: SecretResult,
    set: string | undefined,
    afterStepUp: PendingStepUp | undefined,
  ): void {
    if (result.ok) {
      fetchedAt = new Date();
      stepUpFor = undefined;
      view.clearNotice();
      view.renderSecrets(result.entries, { copy: copyToClipboard }, fetchedAt);
      const fetched =
        set === undefined
          ? `Fetched at ${clockTime(fetchedAt)}.`
          : `Fetched the ${set} set at ${clockTime(fetchedAt)}.`;
      view.setSecretsStatus(
        result.renewAt
          ? `${fetched} Minted values renew at ${clockTime(result.renewAt)}.`
          : fetched,
      );
      if (config.cloudfront) view.showCloudfront(config.cloudfront.imageUrl);
      return;
    }
    const { notice } = result;
    if (notice.code === 'step-up-required') {
      // The token stays: it still opens the other sets. Only this one waits for the person.
      view.clearSecrets();
      view.setSecretsStatus('No secrets fetched from this set yet.');
      if (afterStepUp) {
        stepUpFor = undefined;
        view.showNotice(stepUpFailed(notice.stepUp));
        return;
      }
      stepUpFor = {
        reason: 'insufficient_user_authentication',
        ...notice.stepUp,
        ...(set === undefined ? {} : { set }),
      };
      view.showNotice(notice);
      return;
    }
    if (notice.action === 'sign-in') {
      // The gate no longer accepts this token: it is useless, so it is dropped right away.
      forgetSession();
      view.showSignInRequired(notice);
      return;
    }
    if (notice.code === 'missing-scope') {
      view.clearSecrets();
      view.hideCloudfront();
    } else {
      view.setSecretsStatus(
        fetchedAt
          ? `Still showing the secrets fetched at ${clockTime(fetchedAt)}.`
          : 'No secrets fetched yet.',
      );
    }
    view.showNotice(notice, notice.retryAfterSeconds);
  }

  function enterSignedIn(newSession: Session, stepUp?: PendingStepUp): void {
    session = newSession;
    // Back from a step-up: the set that asked for it is the one fetched again, once.
    currentSet = stepUp?.set;
    view.setCurrentSet(currentSet);
    view.clearNotice();
    view.showSignedIn({ subject: newSession.subject, name: newSession.name });
    updateExpiry();
    expiryTicker = setInterval(updateExpiry, 1000);
    refreshSecrets(stepUp);
  }

  function pickSet(set: string | undefined): void {
    if (!session || set === currentSet) return;
    currentSet = set;
    stepUpFor = undefined;
    view.setCurrentSet(set);
    // The shown values belong to the previous set; they must not pass for this one's.
    view.clearSecrets();
    view.clearNotice();
    refreshSecrets();
  }

  /** Leaves for the IdP with what the gate asked for; the session ends with the page. */
  async function stepUp(): Promise<void> {
    const request = stepUpFor;
    if (!request) return;
    view.setSigningIn(true);
    try {
      const url = await auth.authorizationUrl({ request, authTime: session?.authTime });
      window.location.assign(url.href);
    } catch (error) {
      view.setSigningIn(false);
      view.showNotice({ ...signInFailure(error), action: 'none' });
    }
  }

  async function signIn(): Promise<void> {
    view.setSigningIn(true);
    try {
      window.location.assign((await auth.authorizationUrl()).href);
    } catch (error) {
      view.setSigningIn(false);
      // The signed-out panel's own button is right below; a second one would only repeat it.
      view.showNotice({ ...signInFailure(error), action: 'none' });
    }
  }

  async function signOut(): Promise<void> {
    const ending = session;
    forgetSession();
    view.clearNotice();
    view.showSignedOut({ focus: true });
    const endSession = ending ? await auth.endSessionUrl(ending) : undefined;
    // Ends the IdP's session as well, so the next sign-in asks again instead of passing through.
    if (endSession) window.location.assign(endSession.href);
  }

  view.onSignIn(() => void signIn());
  view.onSignOut(() => void signOut());
  view.onRefetch(() => refreshSecrets());
  view.onStepUp(() => void stepUp());
  view.showSecretSets(config.secretSets, pickSet);

  const here = new URL(window.location.href);
  if (!isAuthorizationResponse(here)) {
    view.showSignedOut({ focus: false });
    return;
  }
  // The code is single-use and must not stay in the address bar, history or a bookmark.
  window.history.replaceState(null, '', `${here.pathname}${here.hash}`);
  auth.completeSignIn(here).then(
    ({ session: signedIn, stepUp: answered }) => enterSignedIn(signedIn, answered),
    (error: unknown) => {
      view.showSignInRequired(signInFailure(error));
    },
  );
}

loadConfig(browserFetch, window.location.origin).then(run, (error: unknown) => {
  view.showFatal({
    title: 'The app is not configured',
    detail:
      error instanceof ConfigError
        ? error.message
        : 'The configuration could not be read. Reload the page to try again.',
    action: 'none',
  });
});

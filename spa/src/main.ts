// Entry point: the only place that wires configuration, sign-in, the gate client and the view.
// The session (access token included) is a local variable of this module: memory only.
import { createAuth, isAuthorizationResponse, SignInError, type Session } from './auth.js';
import { ConfigError, loadConfig, type AppConfig } from './config.js';
import { SESSION_EXPIRED } from './gate-answer.js';
import { createSecretClient } from './secret-client.js';
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
  const fetchSecret = createSecretClient(browserFetch, new URL('/secret', origin));
  let session: Session | undefined;
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
  }

  function forgetSession(): void {
    session = undefined;
    fetchedAt = undefined;
    clearInterval(expiryTicker);
    expiryTicker = undefined;
  }

  async function refreshSecrets(): Promise<void> {
    const current = session;
    if (!current) return;
    view.setBusy(true);
    view.setSecretsStatus('Fetching your secrets…');
    const result = await fetchSecret(current, () => new Date());
    view.setBusy(false);
    if (session !== current) return; // signed out while the request was in flight
    if (result.ok) {
      fetchedAt = new Date();
      view.clearNotice();
      view.renderSecrets(result.entries, { copy: copyToClipboard });
      view.setSecretsStatus(`Fetched at ${clockTime(fetchedAt)}.`);
      if (config.cloudfront) view.showCloudfront(config.cloudfront.imageUrl);
      return;
    }
    const { notice } = result;
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

  function enterSignedIn(newSession: Session): void {
    session = newSession;
    view.clearNotice();
    view.showSignedIn({ subject: newSession.subject, name: newSession.name });
    updateExpiry();
    expiryTicker = setInterval(updateExpiry, 1000);
    void refreshSecrets();
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
  view.onRefetch(() => void refreshSecrets());

  const here = new URL(window.location.href);
  if (!isAuthorizationResponse(here)) {
    view.showSignedOut({ focus: false });
    return;
  }
  // The code is single-use and must not stay in the address bar, history or a bookmark.
  window.history.replaceState(null, '', `${here.pathname}${here.hash}`);
  auth.completeSignIn(here).then(enterSignedIn, (error: unknown) => {
    view.showSignInRequired(signInFailure(error));
  });
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

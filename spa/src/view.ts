// The only module that touches the DOM. Elements are looked up once; every value is written with
// textContent (never innerHTML), so nothing from the IdP or the gate can become markup.
import type { NoticeAction } from './gate-answer.js';
import { displayValue, type SecretEntry } from './secret-set.js';
import { describeValueExpiry } from './time-text.js';

/** What the notice area shows; gate answers and sign-in failures both fit. */
export interface NoticeContent {
  readonly title: string;
  readonly detail: string;
  readonly action: NoticeAction;
}

export interface SecretHandlers {
  readonly copy: (entry: SecretEntry) => Promise<boolean>;
}

function element<T extends HTMLElement>(doc: Document, id: string, type: new () => T): T {
  const found = doc.getElementById(id);
  if (!(found instanceof type)) throw new TypeError(`index.html lacks #${id}`);
  return found;
}

/** Binds to the elements of index.html once; throws TypeError if the page and code disagree. */
export function createView(doc: Document) {
  const $ = {
    main: element(doc, 'main', HTMLElement),
    loading: element(doc, 'loading', HTMLElement),
    account: element(doc, 'account', HTMLElement),
    accountName: element(doc, 'account-name', HTMLElement),
    signOut: element(doc, 'sign-out', HTMLButtonElement),
    notice: element(doc, 'notice', HTMLElement),
    noticeTitle: element(doc, 'notice-title', HTMLElement),
    noticeDetail: element(doc, 'notice-detail', HTMLElement),
    noticeSignIn: element(doc, 'notice-sign-in', HTMLButtonElement),
    noticeRetry: element(doc, 'notice-retry', HTMLButtonElement),
    noticeStepUp: element(doc, 'notice-step-up', HTMLButtonElement),
    signedOut: element(doc, 'signed-out', HTMLElement),
    signedOutTitle: element(doc, 'signed-out-title', HTMLElement),
    signIn: element(doc, 'sign-in', HTMLButtonElement),
    signedIn: element(doc, 'signed-in', HTMLElement),
    userTitle: element(doc, 'user-title', HTMLElement),
    userSub: element(doc, 'user-sub', HTMLElement),
    userName: element(doc, 'user-name', HTMLElement),
    userNameRow: element(doc, 'user-name-row', HTMLElement),
    tokenExpiry: element(doc, 'token-expiry', HTMLElement),
    refetch: element(doc, 'refetch', HTMLButtonElement),
    setPicker: element(doc, 'set-picker', HTMLElement),
    secretsStatus: element(doc, 'secrets-status', HTMLElement),
    secrets: element(doc, 'secrets', HTMLElement),
    cloudfront: element(doc, 'cloudfront', HTMLElement),
    cloudfrontImage: element(doc, 'cloudfront-image', HTMLImageElement),
    cloudfrontStatus: element(doc, 'cloudfront-status', HTMLElement),
  };
  // Headings receive focus after a view change so keyboard and screen-reader users land on it.
  for (const heading of [$.signedOutTitle, $.userTitle, $.noticeTitle]) heading.tabIndex = -1;

  let retryTimer: ReturnType<typeof setTimeout> | undefined;
  let retryBlocked = false;

  function setRetryBlocked(seconds: number | undefined): void {
    clearTimeout(retryTimer);
    retryBlocked = seconds !== undefined && seconds > 0;
    const blocked = retryBlocked;
    $.noticeRetry.disabled = blocked;
    $.refetch.disabled = blocked;
    // Long waits are left to the person; the buttons only stay off for a short, honest pause.
    if (seconds !== undefined && blocked) {
      retryTimer = setTimeout(() => setRetryBlocked(undefined), Math.min(seconds, 120) * 1000);
    }
  }

  function showNotice(content: NoticeContent, retryAfterSeconds?: number): void {
    $.noticeTitle.textContent = content.title;
    $.noticeDetail.textContent = content.detail;
    $.noticeSignIn.hidden = content.action !== 'sign-in';
    $.noticeRetry.hidden = content.action !== 'retry';
    $.noticeStepUp.hidden = content.action !== 'step-up';
    $.notice.hidden = false;
    setRetryBlocked(retryAfterSeconds);
    $.noticeTitle.focus();
  }

  function clearNotice(): void {
    $.notice.hidden = true;
    setRetryBlocked(undefined);
  }

  function showSignedOut(options: { focus: boolean }): void {
    $.loading.hidden = true;
    $.account.hidden = true;
    $.accountName.textContent = '';
    $.signedIn.hidden = true;
    $.signedOut.hidden = false;
    clearSecrets();
    hideCloudfront();
    if (options.focus) $.signedOutTitle.focus();
  }

  /** A sign-in prompt in the notice replaces the signed-out panel, so there is one clear action. */
  function showSignInRequired(content: NoticeContent): void {
    showSignedOut({ focus: false });
    $.signedOut.hidden = true;
    showNotice(content);
  }

  function showSignedIn(user: { subject: string; name?: string | undefined }): void {
    $.loading.hidden = true;
    $.signedOut.hidden = true;
    $.userSub.textContent = user.subject;
    // Not every IdP releases a name; an empty row would say nothing.
    $.userName.textContent = user.name ?? '';
    $.userNameRow.hidden = user.name === undefined;
    $.accountName.textContent = `Signed in as ${user.name ?? user.subject}`;
    $.account.hidden = false;
    $.signedIn.hidden = false;
    $.userTitle.focus();
  }

  function setExpiry(text: string): void {
    $.tokenExpiry.textContent = text;
  }

  function setBusy(busy: boolean): void {
    $.main.setAttribute('aria-busy', String(busy));
    if (busy) $.refetch.disabled = true;
    else $.refetch.disabled = retryBlocked;
  }

  function setSecretsStatus(text: string): void {
    $.secretsStatus.textContent = text;
  }

  /** The expiry line of each minted value shown, ticked by `tickExpiries`. */
  let expiryLines: { readonly line: HTMLElement; readonly at: Date }[] = [];
  /** Names the person revealed; a renewal's new value stays revealed instead of re-masking. */
  const revealedNames = new Set<string>();

  function clearSecrets(): void {
    $.secrets.replaceChildren();
    $.secretsStatus.textContent = '';
    expiryLines = [];
    revealedNames.clear();
  }

  function renderSecrets(
    entries: readonly SecretEntry[],
    handlers: SecretHandlers,
    now: Date,
  ): void {
    expiryLines = [];
    $.secrets.replaceChildren(...entries.map((entry, index) => secretRow(entry, index, handlers)));
    tickExpiries(now);
  }

  /** Rewrites each minted value's countdown ("Expires in 42 s (at 14:03:12)"). */
  function tickExpiries(now: Date): void {
    for (const { line, at } of expiryLines) line.textContent = describeValueExpiry(at, now);
  }

  function secretRow(entry: SecretEntry, index: number, handlers: SecretHandlers): HTMLElement {
    const row = doc.createElement('div');
    row.className = 'secret';
    const dt = doc.createElement('dt');
    dt.textContent = entry.name;
    dt.id = `secret-name-${index}`;
    const dd = doc.createElement('dd');
    const value = doc.createElement('code');
    value.className = 'secret-value';
    value.id = `secret-value-${index}`;
    const shownAtFirst = revealedNames.has(entry.name);
    value.textContent = displayValue(entry, shownAtFirst);
    const actions = doc.createElement('span');
    actions.className = 'secret-actions';
    if (entry.sensitive) {
      if (!shownAtFirst) value.setAttribute('aria-label', `${entry.name}, hidden`);
      const reveal = doc.createElement('button');
      reveal.type = 'button';
      reveal.className = 'button button-secondary button-small';
      reveal.setAttribute('aria-controls', value.id);
      reveal.setAttribute('aria-pressed', String(shownAtFirst));
      reveal.setAttribute('aria-label', `${shownAtFirst ? 'Hide' : 'Reveal'} ${entry.name}`);
      reveal.textContent = shownAtFirst ? 'Hide' : 'Reveal';
      reveal.addEventListener('click', () => {
        const revealed = reveal.getAttribute('aria-pressed') !== 'true';
        if (revealed) revealedNames.add(entry.name);
        else revealedNames.delete(entry.name);
        reveal.setAttribute('aria-pressed', String(revealed));
        reveal.textContent = revealed ? 'Hide' : 'Reveal';
        reveal.setAttribute('aria-label', `${revealed ? 'Hide' : 'Reveal'} ${entry.name}`);
        value.textContent = displayValue(entry, revealed);
        if (revealed) value.removeAttribute('aria-label');
        else value.setAttribute('aria-label', `${entry.name}, hidden`);
      });
      actions.append(reveal);
    }
    const copy = doc.createElement('button');
    copy.type = 'button';
    copy.className = 'button button-secondary button-small';
    copy.setAttribute('aria-label', `Copy ${entry.name}`);
    copy.textContent = 'Copy';
    copy.addEventListener('click', () => {
      void handlers.copy(entry).then((copied) => {
        setSecretsStatus(
          copied
            ? `Copied ${entry.name} to the clipboard.`
            : `Copying is not available here; reveal ${entry.name} and select it instead.`,
        );
      });
    });
    actions.append(copy);
    dd.append(value, actions);
    if (entry.expiresAt) {
      // A value minted for this user: it stops working at its expiry and is renewed before.
      const line = doc.createElement('span');
      line.className = 'secret-expiry';
      line.id = `secret-expiry-${index}`;
      value.setAttribute('aria-describedby', line.id);
      dd.append(line);
      expiryLines.push({ line, at: entry.expiresAt });
    }
    row.append(dt, dd);
    return row;
  }

  /**
   * One toggle button per set: the default one and each named set of the configuration; hidden
   * when there is only the default. `onPick` gets the set's name (undefined: the default set).
   */
  function showSecretSets(
    names: readonly string[],
    onPick: (set: string | undefined) => void,
  ): void {
    const sets: (string | undefined)[] = [undefined, ...names];
    $.setPicker.replaceChildren(
      ...sets.map((set) => {
        const button = doc.createElement('button');
        button.type = 'button';
        button.className = 'button button-secondary button-small';
        button.dataset.set = set ?? '';
        button.textContent = set === undefined ? 'Default set' : `${set} set`;
        button.setAttribute('aria-pressed', String(set === undefined));
        button.addEventListener('click', () => onPick(set));
        return button;
      }),
    );
    $.setPicker.hidden = names.length === 0;
  }

  /** Marks the set whose secrets are shown (undefined: the default set). */
  function setCurrentSet(set: string | undefined): void {
    for (const button of $.setPicker.querySelectorAll('button')) {
      button.setAttribute('aria-pressed', String(button.dataset.set === (set ?? '')));
    }
  }

  function showCloudfront(imageUrl: URL): void {
    $.cloudfront.hidden = false;
    $.cloudfrontStatus.textContent = 'Loading the private image…';
    $.cloudfrontImage.hidden = true;
    // Setting src again after new cookies were set makes the browser ask once more.
    $.cloudfrontImage.removeAttribute('src');
    $.cloudfrontImage.src = imageUrl.href;
  }

  function hideCloudfront(): void {
    $.cloudfront.hidden = true;
    $.cloudfrontImage.removeAttribute('src');
    $.cloudfrontImage.hidden = true;
    $.cloudfrontStatus.textContent = '';
  }

  $.cloudfrontImage.addEventListener('load', () => {
    $.cloudfrontImage.hidden = false;
    $.cloudfrontStatus.textContent = 'Loaded with your signed CloudFront cookies.';
  });
  $.cloudfrontImage.addEventListener('error', () => {
    if (!$.cloudfrontImage.getAttribute('src')) return;
    $.cloudfrontImage.hidden = true;
    $.cloudfrontStatus.textContent =
      'The private image could not be loaded: the signed cookies are missing, expired or not valid for this path.';
  });

  function onSignIn(handler: () => void): void {
    $.signIn.addEventListener('click', handler);
    $.noticeSignIn.addEventListener('click', handler);
  }

  function onSignOut(handler: () => void): void {
    $.signOut.addEventListener('click', handler);
  }

  function onRefetch(handler: () => void): void {
    $.refetch.addEventListener('click', handler);
    $.noticeRetry.addEventListener('click', handler);
  }

  function onStepUp(handler: () => void): void {
    $.noticeStepUp.addEventListener('click', handler);
  }

  function setSigningIn(busy: boolean): void {
    $.signIn.disabled = busy;
    $.noticeSignIn.disabled = busy;
    $.noticeStepUp.disabled = busy;
  }

  function showFatal(content: NoticeContent): void {
    $.loading.hidden = true;
    showNotice(content);
  }

  return {
    showNotice,
    clearNotice,
    showSignedOut,
    showSignInRequired,
    showSignedIn,
    setExpiry,
    setBusy,
    setSecretsStatus,
    clearSecrets,
    renderSecrets,
    tickExpiries,
    showSecretSets,
    setCurrentSet,
    showCloudfront,
    hideCloudfront,
    onSignIn,
    onSignOut,
    onRefetch,
    onStepUp,
    setSigningIn,
    showFatal,
  };
}

export type View = ReturnType<typeof createView>;

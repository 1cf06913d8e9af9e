// The authorization-code + PKCE rules oauth2-mock-server leaves out. It accepts any `code` at
// /token, and skips the PKCE check when `code_verifier` is absent; here a code must have been
// issued by /authorize with an S256 challenge, for that client and redirect_uri, used once, soon.
import { createHash, timingSafeEqual } from 'node:crypto';
import { authenticate, type Authentication } from './sign-in.js';

/** What /authorize recorded about a code it issued. */
export interface IssuedCode {
  readonly clientId: string;
  readonly redirectUri: string;
  readonly scope: string | undefined;
  readonly challenge: string;
  readonly expiresAt: number;
  /** The sign-in behind the code (acr, amr, auth_time), from the request's acr_values. */
  readonly authentication: Authentication;
}

/** Outcome of redeeming a code: the record, or an OAuth error for the token response. */
export type Redemption =
  | { readonly ok: true; readonly code: IssuedCode }
  | {
      readonly ok: false;
      readonly error: 'invalid_grant' | 'invalid_request';
      readonly description: string;
    };

export interface AuthorizationRequestCheck {
  readonly ok: boolean;
  readonly error?: string;
  readonly description?: string;
}

const CODE_TTL_MS = 60_000;
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** Keeps the codes /authorize hands out until /token redeems them (once) or they expire. */
export function createCodeBook(options: {
  clients: readonly string[];
  redirectOrigins: readonly string[];
}) {
  const clients = new Set(options.clients);
  const origins = new Set(options.redirectOrigins);
  const codes = new Map<string, IssuedCode>();

  /**
   * Checks an /authorize query before the library sees it: known client, a redirect_uri on
   * loopback or an allowed origin, `response_type=code`, and an S256 code_challenge (RFC 7636;
   * `plain` is refused as OAuth 2.1 does).
   */
  function checkAuthorizeRequest(query: URLSearchParams): AuthorizationRequestCheck {
    const clientId = query.get('client_id');
    if (!clientId || !clients.has(clientId)) {
      return { ok: false, error: 'unauthorized_client', description: 'unknown "client_id"' };
    }
    const redirectUri = query.get('redirect_uri');
    if (!redirectUri || !isAllowedRedirect(redirectUri, origins)) {
      return { ok: false, error: 'invalid_request', description: '"redirect_uri" is not allowed' };
    }
    if (query.get('response_type') !== 'code') {
      return {
        ok: false,
        error: 'unsupported_response_type',
        description: '"response_type" must be code',
      };
    }
    if (!query.get('code_challenge') || query.get('code_challenge_method') !== 'S256') {
      return {
        ok: false,
        error: 'invalid_request',
        description: 'PKCE with "code_challenge_method" S256 is required',
      };
    }
    return { ok: true };
  }

  function remember(code: string, query: URLSearchParams, now = Date.now()): void {
    prune(now);
    codes.set(code, {
      clientId: query.get('client_id') ?? '',
      redirectUri: query.get('redirect_uri') ?? '',
      scope: query.get('scope') ?? undefined,
      challenge: query.get('code_challenge') ?? '',
      expiresAt: now + CODE_TTL_MS,
      authentication: authenticate(query, Math.floor(now / 1000)),
    });
  }

  /** Redeems a code once; a second try, a wrong client, redirect_uri or verifier all fail. */
  function redeem(
    request: { code?: unknown; clientId: string; redirectUri?: unknown; verifier?: unknown },
    now = Date.now(),
  ): Redemption {
    if (typeof request.code !== 'string') return invalid('invalid_request', '"code" is required');
    const code = codes.get(request.code);
    codes.delete(request.code);
    if (!code || code.expiresAt <= now)
      return invalid('invalid_grant', 'unknown or expired "code"');
    if (code.clientId !== request.clientId)
      return invalid('invalid_grant', '"code" was issued to another client');
    if (request.redirectUri !== code.redirectUri)
      return invalid('invalid_grant', '"redirect_uri" does not match');
    if (typeof request.verifier !== 'string' || !VERIFIER.test(request.verifier)) {
      return invalid('invalid_request', '"code_verifier" is missing or malformed');
    }
    const derived = Buffer.from(createHash('sha256').update(request.verifier).digest('base64url'));
    const expected = Buffer.from(code.challenge);
    if (derived.length !== expected.length || !timingSafeEqual(derived, expected)) {
      return invalid('invalid_grant', '"code_verifier" does not match "code_challenge"');
    }
    return { ok: true, code };
  }

  function prune(now: number): void {
    for (const [key, code] of codes) if (code.expiresAt <= now) codes.delete(key);
  }

  return { checkAuthorizeRequest, remember, redeem };
}

export type CodeBook = ReturnType<typeof createCodeBook>;

function invalid(error: 'invalid_grant' | 'invalid_request', description: string): Redemption {
  return { ok: false, error, description };
}

function isAllowedRedirect(raw: string, origins: ReadonlySet<string>): boolean {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return false;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  return LOOPBACK_HOSTS.has(url.hostname) || origins.has(url.origin);
}

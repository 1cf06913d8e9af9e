// What the dev IdP puts in tokens and which token requests it refuses, as hooks on
// oauth2-mock-server's service. Access tokens follow RFC 9068: `typ: at+jwt`, `aud` = the API,
// `client_id` and `azp` = the requesting client, `scope` as requested, a `jti`; a user's tokens
// (access and ID) also say how the user signed in: `acr`, `amr`, `auth_time` (sign-in.ts).
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type {
  MutableResponse,
  MutableToken,
  OAuth2Service,
  TokenRequestIncomingMessage,
} from 'oauth2-mock-server';
import type { CodeBook, IssuedCode } from './authorization-codes.js';
import type { IdpConfig } from './config.js';
import { authenticationClaims } from './sign-in.js';
import type { IdpState } from './state.js';

const GRANTS = new Set(['client_credentials', 'authorization_code']);

/** Per token request: how many JWTs were built so far (the access token is the first) and the code. */
interface RequestFacts {
  built: number;
  code: IssuedCode | undefined;
  refusal: { status: number; error: string; description: string } | undefined;
}

/** Wires the token and authorization hooks onto a service; call once per service. */
export function applyTokenRules(
  service: OAuth2Service,
  deps: {
    config: IdpConfig;
    state: IdpState;
    codes: CodeBook;
    /** Token requests with a valid DPoP proof → the proof key's RFC 7638 thumbprint. */
    boundKeys?: WeakMap<IncomingMessage, string>;
  },
): void {
  const { config, state, codes } = deps;
  const boundKeys = deps.boundKeys ?? new WeakMap<IncomingMessage, string>();
  const clients = new Set(config.clients);
  const facts = new WeakMap<IncomingMessage, RequestFacts>();

  /** Decides once per request, before the first JWT is signed, whether the request is allowed. */
  function factsFor(req: TokenRequestIncomingMessage): RequestFacts {
    let found = facts.get(req);
    if (found) return found;
    found = { built: 0, code: undefined, refusal: undefined };
    facts.set(req, found);
    const body = req.body;
    const clientId = requestingClient(req);
    if (!GRANTS.has(body.grant_type)) {
      found.refusal = {
        status: 400,
        error: 'unsupported_grant_type',
        description: 'use client_credentials or authorization_code',
      };
    } else if (!clientId || !clients.has(clientId)) {
      found.refusal = { status: 401, error: 'invalid_client', description: 'unknown "client_id"' };
    } else if (body.grant_type === 'authorization_code') {
      const raw = body as unknown as Record<string, unknown>;
      const redemption = codes.redeem({
        code: raw.code,
        clientId,
        redirectUri: raw.redirect_uri,
        verifier: raw.code_verifier,
      });
      if (redemption.ok) found.code = redemption.code;
      else
        found.refusal = {
          status: 400,
          error: redemption.error,
          description: redemption.description,
        };
    }
    return found;
  }

  service.on('beforeTokenSigning', (token: MutableToken, req: TokenRequestIncomingMessage) => {
    const request = factsFor(req);
    request.built += 1;
    const clientId = requestingClient(req) ?? '';
    if (request.built > 1) {
      // The ID token of the authorization-code flow: audience is the client, subject the user.
      Object.assign(token.payload, { sub: config.userSub, name: config.userName, azp: clientId });
      if (request.code)
        Object.assign(token.payload, authenticationClaims(request.code.authentication));
      return;
    }
    const userFlow = req.body.grant_type === 'authorization_code';
    const scope = userFlow ? (request.code?.scope ?? req.body.scope) : req.body.scope;
    token.header.typ = 'at+jwt';
    Object.assign(token.payload, {
      aud: config.audience,
      sub: userFlow ? config.userSub : clientId,
      client_id: clientId,
      azp: clientId,
      jti: randomUUID(),
    });
    if (scope) token.payload.scope = scope;
    else delete token.payload.scope;
    // A client has no sign-in to speak of: client-credentials tokens carry none of these.
    if (request.code)
      Object.assign(token.payload, authenticationClaims(request.code.authentication));
    // RFC 9449 §6.1: the access token names the key its proofs must be signed with.
    const jkt = boundKeys.get(req);
    if (jkt !== undefined) token.payload.cnf = { jkt };
    const queued = request.refusal ? undefined : state.nextClaims.shift();
    if (queued) applyClaims(token.payload, queued);
  });

  service.on('beforeResponse', (response: MutableResponse, req: TokenRequestIncomingMessage) => {
    const request = factsFor(req);
    if (request.refusal) {
      state.counters.tokenErrors += 1;
      response.statusCode = request.refusal.status;
      response.body = {
        error: request.refusal.error,
        error_description: request.refusal.description,
      };
      return;
    }
    if (response.statusCode !== 200 || typeof response.body !== 'object') {
      state.counters.tokenErrors += 1;
      return;
    }
    state.counters.tokensIssued += 1;
    if (boundKeys.has(req)) response.body.token_type = 'DPoP';
    // The library mints a refresh token it never checks; a public SPA client gets none here.
    delete response.body.refresh_token;
    const scope = request.code?.scope ?? req.body.scope;
    if (scope) response.body.scope = scope;
    else delete response.body.scope;
  });

  // The library answers every UserInfo call with `sub: johndoe`. Answer for the demo user, and
  // only to a caller that presents a bearer token (the handler is synchronous, so no verification).
  service.on('beforeUserinfo', (response: MutableResponse, req: IncomingMessage) => {
    if (!/^(?:Bearer|DPoP) \S+$/i.test(req.headers.authorization ?? '')) {
      response.statusCode = 401;
      response.body = { error: 'invalid_token' };
      return;
    }
    response.body = { sub: config.userSub, name: config.userName };
  });

  service.on('beforeAuthorizeRedirect', (redirect: { url: URL }, req: IncomingMessage) => {
    const code = redirect.url.searchParams.get('code');
    const query = new URL(req.url ?? '/', 'http://idp.invalid').searchParams;
    if (code) codes.remember(code, query);
  });
}

/** Merges claims into a payload; a `null` value removes the claim (e.g. `{ scope: null }`). */
export function applyClaims(
  payload: Record<string, unknown>,
  claims: Record<string, unknown>,
): void {
  for (const [name, value] of Object.entries(claims)) {
    if (value === null) delete payload[name];
    else payload[name] = value;
  }
}

/** The client from HTTP Basic credentials, else from the `client_id` form field. */
function requestingClient(req: TokenRequestIncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (header?.startsWith('Basic ')) {
    const decoded = Buffer.from(header.slice(6), 'base64').toString('utf8');
    const name = decoded.slice(0, Math.max(0, decoded.indexOf(':')));
    if (name) return safeDecode(name);
  }
  const fromBody = (req.body as unknown as Record<string, unknown>).client_id;
  return typeof fromBody === 'string' && fromBody ? fromBody : undefined;
}

function safeDecode(value: string): string | undefined {
  try {
    return decodeURIComponent(value);
  } catch {
    return undefined;
  }
}

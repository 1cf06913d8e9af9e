// A Decision rendered as the answer of /verify (contract.ts): the only place status codes, identity
// headers and RFC 6750 challenges are built; a plugin's headers pass as the plugin rendered them,
// and the transport writes the result verbatim.
import { hash } from 'node:crypto';
import type { Answer, Decision, Header } from '../decision/decision.js';
import { statusFor } from '../errors.js';
import {
  BEARER_REALM,
  EDGE_MARKERS,
  insufficientScopeChallenge,
  invalidTokenChallenge,
  resourceMetadataParameter,
  stepUpChallengeText,
} from '../refusals.js';
import { headerSafe, scopeHeader } from '../token/identity.js';
import { createInterner } from '../intern.js';
import type { Identity } from '../token/identity.js';
import { withHead, type WithHead } from './answer-head.js';

/** /verify's answer: no body, and only the statuses auth_request understands. */
export type VerifyAnswer = Pick<Answer, 'headers'> & { readonly status: 204 | 401 | 403 };

/**
 * The secret set NGINX serves for an allow (`X-Auth-Set`): `c` + the first 32 hex digits of
 * SHA-256(`issuer` LF `client`), so NGINX picks the set's file without knowing either and no claim
 * can name a path; the issuer is in it, as client ids are unique only within one issuer. The same
 * derivation writes the files (nginx/njs/secret-sets.js); test/nginx checks they agree. Undefined
 * without a client id (NGINX then serves the default set).
 */
export function secretSetName(issuer: string, client: string): string | undefined {
  if (client === '') return undefined;
  return `c${hash('sha256', `${issuer}\n${client}`, 'hex').slice(0, 32)}`;
}

// Header pairs for values many tokens share (client, set, challenges) are built once.
const sharedPair = createInterner<Header>(10_000);
/**
 * An allow's `X-Auth-Client` and `X-Auth-Set` pairs, by issuer and client, and the last plain allow
 * answer built from them: a cached token asks again with the same edge lifetime, so its answer is
 * reused whole, its head prepared, instead of allocated per request (one slot: bounded, whatever
 * the lifetimes).
 */
interface IdentityAnswers {
  readonly pairs: readonly [Header, Header];
  last: WithHead<VerifyAnswer> | undefined;
  /** False past MAX_IDENTITIES: built for one request, so no head is prepared for it. */
  readonly held: boolean;
}
/** At most this many (issuer, client) pairs are remembered; others get answers built per request. */
const MAX_IDENTITIES = 10_000;
/**
 * By issuer, then client: two lookups of strings the decision cache shares between hits (their
 * hashes computed once), instead of a key string built and hashed per request.
 */
const identityAnswers = new Map<string, Map<string, IdentityAnswers>>();
let identitiesHeld = 0;

function answersOf({ issuer, client }: Identity): IdentityAnswers {
  let clients = identityAnswers.get(issuer);
  const known = clients?.get(client);
  if (known !== undefined) return known;
  const made: IdentityAnswers = {
    pairs: [
      ['X-Auth-Client', headerSafe(client)],
      ['X-Auth-Set', secretSetName(issuer, client) as string],
    ],
    last: undefined,
    held: identitiesHeld < MAX_IDENTITIES,
  };
  if (!made.held) return made;
  if (clients === undefined)
    identityAnswers.set(issuer, (clients = new Map<string, IdentityAnswers>()));
  clients.set(client, made);
  identitiesHeld++;
  return made;
}

const NOT_STORED: Header = ['X-Accel-Expires', '0'];
// `X-Accel-Expires`: how many seconds NGINX's decision cache may answer for this one; always sent,
// so 0 ("do not store") is explicit on every answer NGINX must not reuse.
const ACCEL_EXPIRES: readonly Header[] = Array.from(
  { length: 301 },
  (_, seconds) => ['X-Accel-Expires', String(seconds)] as const,
);
const edgeExpires = ({ edgeTtl = 0 }: Decision): Header =>
  ACCEL_EXPIRES[edgeTtl] ?? ['X-Accel-Expires', String(edgeTtl)];

/** How /verify's answers are written; `resourceMetadata`: VERIFIER_RESOURCE_METADATA_URL. */
export interface RenderOptions {
  readonly resourceMetadata?: string | undefined;
}

/**
 * The renderer of /verify's answers. With `resourceMetadata` every challenge (401 and the 403
 * `insufficient_scope`, a plugin's too) ends in `resource_metadata="…"` (RFC 9728 §5.1), so a
 * client can discover the authorization server and scopes from any refusal. Built once at start;
 * challenges are fixed strings or interned per value.
 */
export function createRenderer({ resourceMetadata }: RenderOptions = {}) {
  const suffix = resourceMetadataParameter(resourceMetadata);
  const denial = (status: 401 | 403, challenge?: string): VerifyAnswer => ({
    status,
    headers:
      challenge === undefined
        ? [NOT_STORED]
        : [['WWW-Authenticate', challenge + suffix], NOT_STORED],
  });
  const NO_TOKEN = denial(401, BEARER_REALM);
  const INVALID_TOKEN = denial(401, invalidTokenChallenge());
  // A client id NGINX would have to alter (trim, cut, encode) to carry it; RFC 6750 has no code
  // for "valid token, unusable client", so it is an invalid_token with a description naming it.
  const CLIENT_ID_INVALID = denial(401, invalidTokenChallenge('client_id_invalid'));
  // A token over the documented size (16 KiB) is named, so NGINX's body can say why a valid token
  // of a generous IdP was refused (conf.d/default.conf maps the description to the body).
  const TOKEN_TOO_LARGE = denial(401, invalidTokenChallenge('token_too_large'));
  const CLIENT_UNKNOWN = denial(403);
  /** A plugin's challenge (DPoP) with the metadata added; other headers as rendered. */
  const withMetadata = (headers: readonly Header[]): readonly Header[] =>
    suffix === ''
      ? headers
      : headers.map((header) =>
          header[0] === 'WWW-Authenticate'
            ? sharedPair(`w ${header[1]}`, () => ['WWW-Authenticate', header[1] + suffix])
            : header,
        );

  /**
   * 204 carries the identity headers (and a plugin's); 401 carries `WWW-Authenticate` with
   * `error="invalid_token"` only when a token was sent (RFC 6750 §3.1), the step-up challenge
   * (RFC 9470 §3), or the plugin's own challenge (DPoP, RFC 9449 §7.1); 403 carries
   * `X-Auth-Challenge`, which NGINX copies into `WWW-Authenticate` (NGINX passes
   * `WWW-Authenticate` from an auth subrequest only on 401). A step-up 401 is never stored at the
   * edge: the next request may bring the new token's answer.
   */
  return function renderDecision(decision: Decision): VerifyAnswer {
    if (decision.outcome === 'allow') return allowAnswer(decision);
    const { status, headers } = renderRefusal(decision);
    // The reason code (errors.ts's closed union) for NGINX's access log (`reason`).
    const reason = sharedPair(`r ${decision.reason}`, () => ['X-Auth-Reason', decision.reason]);
    return { status, headers: [...headers, reason] };
  };

  function renderRefusal(decision: Decision & { outcome: 'deny' }): VerifyAnswer {
    const status = statusFor(decision.reason);
    if (decision.reason === 'client_id_invalid') return CLIENT_ID_INVALID;
    if (decision.reason === 'token_too_large') return TOKEN_TOO_LARGE;
    const minting = MINT_REFUSALS.get(decision.reason);
    if (minting !== undefined) return minting;
    if (status === 401 && decision.headers !== undefined)
      return { status, headers: withMetadata(decision.headers) };
    if (decision.stepUp !== undefined) {
      const challenge = stepUpChallengeText(decision.stepUp) + suffix;
      return {
        status,
        headers: [sharedPair(`s ${challenge}`, () => ['WWW-Authenticate', challenge]), NOT_STORED],
      };
    }
    if (status === 401) return decision.reason === 'token_missing' ? NO_TOKEN : INVALID_TOKEN;
    // No client, no secret set: more scopes would not help, so no `insufficient_scope` challenge.
    if (decision.reason === 'client_unknown') return CLIENT_UNKNOWN;
    // Nor for a client the policy does not serve; the token's answer, kept at the edge like one.
    if (decision.reason === 'client_not_allowed')
      return { status, headers: [edgeExpires(decision)] };
    const required = decision.requiredScopes ?? [];
    const scopes = required.length > 0 ? scopeHeader(required) : undefined;
    const challenge = insufficientScopeChallenge(scopes) + suffix;
    const pair = sharedPair(`x ${challenge}`, () => ['X-Auth-Challenge', challenge] as const);
    return { status, headers: [pair, edgeExpires(decision)] };
  }
}

/**
 * A set value that could not be minted (minted/grant.ts): a 403 whose `X-Auth-Challenge` NGINX
 * reads as the body's reason (conf.d/default.conf): `mint_failed <reason>` becomes a 502
 * (auth_request passes no 5xx on), `mint_refused claim_missing` stays a 403. Never stored.
 */
const MINT_REFUSALS = new Map<Decision['reason'], VerifyAnswer>(
  (
    [
      'mint_claim_missing',
      'mint_exchange_refused',
      'mint_exchange_failed',
      'mint_key_unavailable',
    ] as const
  ).map((code) => [
    code,
    { status: 403, headers: [['X-Auth-Challenge', EDGE_MARKERS[code]], NOT_STORED] },
  ]),
);

/**
 * A minted grant's values (minted/grant.ts) travel in `X-Auth-Set`, after the set's name and a
 * space: NGINX already reads that header for every set, so a set without minted values pays no
 * lookup more for the feature (docs/minted/README.md).
 */
const MINTED_HEADER = 'X-Auth-Minted';

/** The renderer without `resource_metadata`, for callers that configure none (tests, tools). */
export const renderDecision = createRenderer();

/** An allow without a client id and without a plugin's headers, by edge lifetime: built once. */
const PLAIN_ALLOWS: readonly VerifyAnswer[] = ACCEL_EXPIRES.map((expires) =>
  withHead({ status: 204, headers: [expires] }),
);

/**
 * An allow is short on purpose: NGINX stores it in its edge cache and parses every header again
 * on each hit. `X-Auth-Client` is for the access log; it and `X-Auth-Set` are built once per
 * (issuer, client) and shared by every decision that has it; an allow without a plugin's headers
 * (the cached bearer request) is a shared answer, not a new one.
 */
function allowAnswer(decision: Decision): VerifyAnswer {
  const { identity, edgeTtl = 0 } = decision;
  if (identity === undefined || identity.client === '') {
    const plain = decision.headers === undefined ? PLAIN_ALLOWS[edgeTtl] : undefined;
    return plain ?? { status: 204, headers: allowHeaders(decision, undefined) };
  }
  const known = answersOf(identity);
  if (decision.headers !== undefined)
    return { status: 204, headers: allowHeaders(decision, known.pairs) };
  const { last } = known;
  const expires = edgeExpires(decision);
  // By value: a lifetime past ACCEL_EXPIRES's table is a new pair each time, yet the same answer.
  if (last !== undefined && last.headers[0]![1] === expires[1]) return last;
  const answer: VerifyAnswer = { status: 204, headers: [expires, ...known.pairs] };
  return known.held ? (known.last = withHead(answer)) : answer;
}

/** An allow's headers: the edge lifetime, the identity pairs if any, a plugin's headers. */
function allowHeaders(decision: Decision, pairs: readonly [Header, Header] | undefined): Header[] {
  const headers: Header[] = [edgeExpires(decision)];
  const minted = decision.headers?.find(([name]) => name === MINTED_HEADER)?.[1];
  if (pairs !== undefined) {
    headers.push(
      pairs[0],
      minted === undefined ? pairs[1] : ['X-Auth-Set', `${pairs[1][1]} ${minted}`],
    );
  } else if (minted !== undefined) headers.push(['X-Auth-Set', `default ${minted}`]);
  if (decision.headers !== undefined)
    headers.push(
      ...(minted === undefined
        ? decision.headers
        : decision.headers.filter(([name]) => name !== MINTED_HEADER)),
    );
  return headers;
}

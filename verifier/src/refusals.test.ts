// Every challenge and refusal /verify writes, byte for byte: clients and NGINX's maps parse these
// strings, so a change of wording is a change of the contract, never a side effect of a refactor.
import { describe, expect, it } from 'vitest';
import { deny, type Decision } from './decision/decision.js';
import { stepUpChallenge } from './decision/step-up.js';
import { dpopDenial } from './dpop/challenge.js';
import { createRenderer } from './http/verify-answer.js';
import { BODY_TOO_LARGE, jsonRefusal, METHOD_NOT_ALLOWED, UNKNOWN_CALLER } from './refusals.js';

const identity = { sub: 'u', client: 'spa-demo', scopes: [], issuer: 'https://i' };
const METADATA = 'https://gate.example/.well-known/oauth-protected-resource';
const REALM = 'Bearer realm="secret-gate"';
const SUFFIX = `, resource_metadata="${METADATA}"`;
const weak = { authentication: { acr: ['urn:basic'], amr: [], authTime: 1, tolerance: 0 } };
const stale = { authentication: { acr: ['urn:mfa'], amr: [], authTime: 1, tolerance: 0 } };
const policy = { acrValues: ['urn:mfa', 'urn:hw'], maxAge: 300 };
const levelUp = stepUpChallenge(weak, policy);
const recencyUp = stepUpChallenge(stale, policy);
const DIFFERENT = 'A different authentication level is required';
const RECENT = 'More recent authentication is required';

/** [title, decision, status, header pairs without resource metadata]. */
const TABLE: [string, Decision, number, [string, string][]][] = [
  ['a missing token', deny('token_missing'), 401, [['WWW-Authenticate', REALM]]],
  [
    'a bad signature',
    deny('signature_invalid'),
    401,
    [['WWW-Authenticate', `${REALM}, error="invalid_token"`]],
  ],
  [
    'a client id no header carries',
    deny('client_id_invalid'),
    401,
    [
      [
        'WWW-Authenticate',
        `${REALM}, error="invalid_token", error_description="client_id_invalid"`,
      ],
    ],
  ],
  [
    'a token over 16 KiB',
    deny('token_too_large'),
    401,
    [['WWW-Authenticate', `${REALM}, error="invalid_token", error_description="token_too_large"`]],
  ],
  [
    'missing scopes',
    deny('scope_insufficient', identity, ['secrets:read', 'audit']),
    403,
    [['X-Auth-Challenge', `${REALM}, error="insufficient_scope", scope="secrets:read audit"`]],
  ],
  [
    'a step-up for the level',
    { ...deny('insufficient_user_authentication'), stepUp: levelUp },
    401,
    [
      [
        'WWW-Authenticate',
        `${REALM}, error="insufficient_user_authentication", error_description="${DIFFERENT}", acr_values="urn:mfa urn:hw", max_age="300"`,
      ],
    ],
  ],
  [
    'a step-up for recency',
    { ...deny('insufficient_user_authentication'), stepUp: recencyUp },
    401,
    [
      [
        'WWW-Authenticate',
        `${REALM}, error="insufficient_user_authentication", error_description="${RECENT}", acr_values="urn:mfa urn:hw", max_age="300"`,
      ],
    ],
  ],
  [
    'a DPoP proof missing, with a nonce',
    dpopDenial('dpop_proof_missing', { algs: 'ES256 EdDSA', nonce: 'n-1' }),
    401,
    [
      [
        'WWW-Authenticate',
        'DPoP error="invalid_dpop_proof", error_description="a DPoP proof is required", algs="ES256 EdDSA"',
      ],
      ['DPoP-Nonce', 'n-1'],
    ],
  ],
  [
    'a bearer token where DPoP is required',
    dpopDenial('dpop_required', { algs: 'ES256' }),
    401,
    [
      [
        'WWW-Authenticate',
        'DPoP error="invalid_token", error_description="a DPoP-bound token and proof are required", algs="ES256"',
      ],
    ],
  ],
  [
    'a token error on a DPoP request',
    dpopDenial('token_expired', { algs: 'ES256' }),
    401,
    [
      [
        'WWW-Authenticate',
        'DPoP error="invalid_token", error_description="the token is not valid", algs="ES256"',
      ],
    ],
  ],
  [
    'no token on a DPoP location',
    dpopDenial('token_missing', { algs: 'ES256' }),
    401,
    [['WWW-Authenticate', 'DPoP algs="ES256"']],
  ],
  [
    'a DPoP client that must sign in again',
    dpopDenial('insufficient_user_authentication', { algs: 'ES256', stepUp: levelUp }),
    401,
    [
      [
        'WWW-Authenticate',
        `DPoP error="insufficient_user_authentication", error_description="${DIFFERENT}", acr_values="urn:mfa urn:hw", max_age="300", algs="ES256"`,
      ],
    ],
  ],
  ['a token naming no client', deny('client_unknown'), 403, []],
  [
    'a mint that failed',
    deny('mint_exchange_failed'),
    403,
    [['X-Auth-Challenge', 'mint_failed exchange_failed']],
  ],
  [
    'a mint refused for a missing claim',
    deny('mint_claim_missing'),
    403,
    [['X-Auth-Challenge', 'mint_refused claim_missing']],
  ],
];

/** The refusal's own headers: the bookkeeping ones (edge TTL, reason) are checked elsewhere. */
const challengeHeaders = (headers: readonly (readonly [string, string])[]) =>
  headers.filter(([name]) => name !== 'X-Accel-Expires' && name !== 'X-Auth-Reason');

describe('the words of every /verify refusal', () => {
  it.each(TABLE)('%s', (_title, decision, status, expected) => {
    const answer = createRenderer()(decision);
    expect(answer.status).toBe(status);
    expect(challengeHeaders(answer.headers)).toEqual(expected);
  });

  it.each(TABLE)(
    '%s, ending in resource_metadata when configured',
    (_title, decision, status, expected) => {
      const answer = createRenderer({ resourceMetadata: METADATA })(decision);
      expect(answer.status).toBe(status);
      // A challenge (Bearer or DPoP) ends in it; a mint marker is NGINX's, not the client's.
      const challenged = (value: string) => /^(Bearer|DPoP) /.test(value);
      expect(challengeHeaders(answer.headers)).toEqual(
        expected.map(([name, value]) =>
          challenged(value) ? [name, value + SUFFIX] : [name, value],
        ),
      );
    },
  );
});

describe("the other routes' JSON refusals", () => {
  const JSON_NO_STORE = [
    ['Content-Type', 'application/json'],
    ['Cache-Control', 'no-store'],
  ];

  it.each([
    ['a receiver asked with GET', METHOD_NOT_ALLOWED, 405, '{"error":"invalid_request"}'],
    [
      'a receiver body over the cap',
      BODY_TOO_LARGE,
      413,
      '{"error":"invalid_request","error_description":"the body is too large"}',
    ],
    [
      'a receiver call around NGINX',
      UNKNOWN_CALLER,
      401,
      '{"error":"invalid_request","error_description":"unknown caller"}',
    ],
    ['a refused SET', jsonRefusal(400, { err: 'invalid_issuer' }), 400, '{"err":"invalid_issuer"}'],
  ])('%s', (_title, answer, status, body) => {
    expect(answer).toEqual({ status, headers: JSON_NO_STORE, body });
  });

  it('adds a retry hint after the media type and never stores the answer', () => {
    const answer = jsonRefusal(429, { error: 'too_many_requests' }, [['Retry-After', '2']]);
    expect(answer.headers).toEqual([...JSON_NO_STORE, ['Retry-After', '2']]);
    expect(answer.body).toBe('{"error":"too_many_requests"}');
  });
});

// The /verify contract table names every header the verifier reads and writes, so the generated
// docs (docs/architecture.md) cannot leave one out.
import { describe, expect, it } from 'vitest';
import { allow, deny, withHeaders, type Decision } from '../decision/decision.js';
import { CLOUDFRONT_HEADERS, cloudFrontHeaders } from '../cloudfront/grant.js';
import { DPOP_HEADERS, dpopDenial } from '../dpop/challenge.js';
import { ANSWER_HEADERS, REQUEST_HEADERS } from './contract.js';
import { renderDecision } from './verify-answer.js';

const identity = { sub: 'u', client: 'spa-demo', scopes: ['secrets:read'], issuer: 'https://i' };
const declared = new Set(
  [...ANSWER_HEADERS, ...DPOP_HEADERS, ...CLOUDFRONT_HEADERS].flatMap((row) =>
    row.name.split(', '),
  ),
);
const cookies = cloudFrontHeaders(
  {
    cookies: {
      'CloudFront-Policy': 'p',
      'CloudFront-Signature': 's',
      'CloudFront-Key-Pair-Id': 'K1',
      'CloudFront-Hash-Algorithm': 'SHA256',
    },
    expires: 1_800_000_000,
  },
  '/',
  undefined,
);

describe('the /verify contract table', () => {
  it.each<[string, Decision]>([
    [
      'an allow with a grant and a nonce',
      withHeaders({ ...allow(identity), edgeTtl: 5 }, [...cookies, ['DPoP-Nonce', 'n']]),
    ],
    ['a missing token', deny('token_missing')],
    ['a bad token', deny('signature_invalid')],
    ['an unexpected failure', deny('internal_error')],
    ['an unusable client id', deny('client_id_invalid')],
    ['a token over 16 KiB', deny('token_too_large')],
    ['a token naming no client', deny('client_unknown')],
    ['missing scopes', deny('scope_insufficient', identity, ['secrets:read'])],
    [
      'a DPoP refusal with a nonce',
      dpopDenial('dpop_nonce_required', { algs: 'ES256', nonce: 'n' }),
    ],
  ])('declares every header of %s', (_title, decision) => {
    const names = renderDecision(decision).headers.map(([name]) => name);
    expect(names.filter((name) => !declared.has(name))).toEqual([]);
  });

  it('has a row for every VerifyRequest field (the policy travels in X-SG-Policy)', () => {
    expect(REQUEST_HEADERS.map((row) => row.field).sort()).toEqual([
      'authorization',
      'dpop',
      'originalMethod',
      'originalOrigin',
      'originalUri',
      'policy',
      'traceparent',
    ]);
  });
});

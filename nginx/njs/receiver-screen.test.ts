// The receivers' body check NGINX runs (njs/receiver-screen.js) against the verifier's own
// receivers: a push NGINX refuses is one the verifier answers with the same 400 and body, over
// generated bodies near a JWT; real logout tokens and SETs, and any form only the verifier parses,
// go on to it. The check runs in NGINX through test/nginx/nginx.test.ts.
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintLogoutToken, mintSet, RECEIVER } from '../../verifier/src/testing/event-tokens.js';
import {
  ISSUER,
  PRIVATE_JWKS,
  startJwksServer,
  type JwksServer,
} from '../../verifier/src/testing/fixtures.js';
import { logoutIssuer } from '../../verifier/src/testing/replicas.js';
import { buildService, type TestService } from '../../verifier/src/testing/service.js';
import {
  startSsfTransmitter,
  type SsfTransmitter,
} from '../../verifier/src/testing/ssf-transmitter.js';
import screen from './receiver-screen.js';

const FORM = 'application/x-www-form-urlencoded';
const SET_TYPE = 'application/secevent+jwt';
const LOGOUT = '/backchannel-logout';
const PUSH = '/ssf/events';
/** What NGINX answers for each receiver: the verifier's own refusal body. */
const REFUSAL = { [LOGOUT]: '{"error":"invalid_request"}', [PUSH]: '{"err":"invalid_request"}' };

let jwks: JwksServer;
let transmitter: SsfTransmitter;
let gate: TestService;

beforeAll(async () => {
  jwks = await startJwksServer(['rsaA']);
  transmitter = await startSsfTransmitter();
  gate = buildService(
    {},
    {
      file: {
        issuers: [logoutIssuer(jwks.url)],
        policies: { secret: { issuers: [ISSUER], scopes: ['secrets:read'] } },
        revocation: { ssf: { transmitter: transmitter.issuer, audience: RECEIVER } },
      },
    },
  );
  await gate.service.start();
  await gate.service.revocation!.transmitterKeys!.refresh();
});
afterAll(async () => {
  await gate.service.stop(0);
  await transmitter.close();
  await jwks.close();
});

/** The verifier's answer to a push at `path`. */
const verifierAnswer = async (path: string, contentType: string | undefined, body: string) =>
  await gate.service.routes.receivers.get(path)!({ contentType, body });

const b64 = (text: string) => Buffer.from(text).toString('base64url');
const jwt = (header: string, payload: string, signature = 'c2ln') =>
  `${b64(header)}.${b64(payload)}.${signature}`;

describe('what NGINX refuses before the verifier', () => {
  it('lets every real logout token and SET through, and any form only the verifier parses', async () => {
    const logout = await mintLogoutToken();
    const set = await mintSet(transmitter.issuer);
    expect(screen.refusalOf(LOGOUT, FORM, `logout_token=${logout}`)).toBeUndefined();
    expect(
      screen.refusalOf(LOGOUT, `${FORM}; charset=UTF-8`, `logout_token=${logout}`),
    ).toBeUndefined();
    expect(screen.refusalOf(PUSH, SET_TYPE, `${set}\r\n`)).toBeUndefined();
    // Encoded, or beside other fields: the verifier's form parser reads those.
    expect(
      screen.refusalOf(LOGOUT, FORM, `logout_token=${encodeURIComponent('%%')}`),
    ).toBeUndefined();
    expect(screen.refusalOf(LOGOUT, FORM, `a=b&logout_token=x`)).toBeUndefined();
    expect(screen.refusalOf(LOGOUT, FORM, 'state=1')).toBeUndefined();
    // No body in memory, or a path that is no receiver: not NGINX's to answer.
    expect(screen.refusalOf(LOGOUT, FORM, undefined)).toBeUndefined();
    expect(screen.refusalOf('/secret', FORM, 'x')).toBeUndefined();
  });

  it('refuses the junk a flood sends: no JWT, the wrong media type, over the size cap', () => {
    const junk = `${randomBytes(40).toString('base64url')}.${randomBytes(60).toString('base64url')}`;
    expect(screen.refusalOf(LOGOUT, FORM, `logout_token=${junk}`)).toBe('token_malformed');
    const segments = [40, 60, 256].map((n) => randomBytes(n).toString('base64url')).join('.');
    expect(screen.refusalOf(LOGOUT, FORM, `logout_token=${segments}`)).toBe('token_malformed');
    expect(screen.refusalOf(PUSH, SET_TYPE, segments)).toBe('token_malformed');
    expect(screen.refusalOf(LOGOUT, 'application/json', '{}')).toBe('request_invalid');
    expect(screen.refusalOf(PUSH, undefined, segments)).toBe('request_invalid');
    const long = jwt('{"alg":"RS256"}', `{"x":"${'a'.repeat(screen.MAX_TOKEN_BYTES)}"}`);
    expect(screen.refusalOf(PUSH, SET_TYPE, long)).toBe('token_malformed');
  });

  it('reads segments as the verifier does: a byte order mark dropped, a payload of 4n + 1 left to it', () => {
    expect(screen.refusalOf(PUSH, SET_TYPE, jwt('\ufeff{"alg":"RS256"}', '{}'))).toBeUndefined();
    expect(screen.refusalOf(PUSH, SET_TYPE, jwt('[]', '{}'))).toBe('token_malformed');
    expect(screen.refusalOf(PUSH, SET_TYPE, jwt('{}', 'null'))).toBe('token_malformed');
    // A header of 4n + 1 characters has one left over: the verifier's strict read refuses it.
    expect(screen.refusalOf(PUSH, SET_TYPE, `${b64('{}')}a.${b64('{}')}.c2ln`)).toBe(
      'token_malformed',
    );
    expect(
      screen.refusalOf(PUSH, SET_TYPE, `${b64('{}')}.${b64('{"abc":1}')}a.c2ln`),
    ).toBeUndefined();
  });

  it('answers every push it refuses exactly as the verifier does, over generated near-JWTs', async () => {
    const real = await mintLogoutToken();
    const realSet = await mintSet(transmitter.issuer);
    const segment = fc.oneof(
      fc
        .constantFrom('{}', '{"alg":"RS256","kid":"k"}', '[]', 'null', '\ufeff{}', '{"a":', '"s"')
        .map(b64),
      fc.uint8Array({ maxLength: 48 }).map((bytes) => Buffer.from(bytes).toString('base64url')),
      fc.string({
        unit: fc.constantFrom('a', 'Z', '0', '-', '_', '.', '=', '!', ' ', '%'),
        maxLength: 12,
      }),
      fc.constantFrom(...real.split('.'), ...realSet.split('.'), PRIVATE_JWKS.rsaA.kid),
    );
    const token = fc.oneof(
      fc.array(segment, { minLength: 1, maxLength: 4 }).map((parts) => parts.join('.')),
      fc.constantFrom(real, realSet),
    );
    const contentType = fc.constantFrom(
      FORM,
      `${FORM};charset=utf-8`,
      SET_TYPE,
      ' Application/SecEvent+JWT ',
      'text/plain',
      undefined,
    );
    const body = fc.oneof(
      token.map((t) => `logout_token=${t}`),
      token,
      token.map((t) => ` ${t}\n`),
      token.map((t) => `logout_token=${t}&logout_token=${t}`),
    );
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(LOGOUT, PUSH),
        contentType,
        body,
        async (path, type, text) => {
          const reason = screen.refusalOf(path, type, text);
          if (reason === undefined) return;
          refused++;
          const answer = await verifierAnswer(path, type, text);
          expect({ status: answer.status, body: answer.body }).toEqual({
            status: 400,
            body: REFUSAL[path],
          });
        },
      ),
      { numRuns: 2_000 },
    );
    // The generator reaches both sides of the check.
    expect(refused).toBeGreaterThan(200);
  });
});

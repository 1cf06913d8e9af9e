// The Shared Signals receiver as a specification, against the harness transmitter: push (RFC 8935)
// and poll (RFC 8936) both act on CAEP/RISC events; each invalid SET variant gets its 400 with a
// registered `err` code (and nothing more) and changes nothing; unknown subjects and event types
// are accepted; an old SET, or one dated after its own `iat`, is refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statusOf } from '../testing/answer.js';
import {
  CAEP_CREDENTIAL_CHANGE,
  CAEP_SESSION_REVOKED,
  mintSet,
  RECEIVER,
  SSF_VERIFICATION,
} from '../testing/event-tokens.js';
import {
  AUDIENCE,
  ISSUER,
  manualClock,
  mintToken,
  PRIVATE_JWKS,
  startJwksServer,
  type JwksServer,
} from '../testing/fixtures.js';
import { buildService, type TestService } from '../testing/service.js';
import { startSsfTransmitter, type SsfTransmitter } from '../testing/ssf-transmitter.js';

let jwks: JwksServer;
let transmitter: SsfTransmitter;
let gate: TestService;
let pushUrl: string;

beforeAll(async () => {
  jwks = await startJwksServer(['rsaA']);
  transmitter = await startSsfTransmitter();
  gate = buildService(
    // A budget of failed signature checks no test here exhausts (back-channel-logout.test.ts).
    {
      VERIFIER_REVOCATION_RECEIVER_RATE: '100000r/s',
      VERIFIER_REVOCATION_RECEIVER_BURST: '100000',
    },
    {
      file: {
        issuers: [{ issuer: ISSUER, audience: AUDIENCE, jwksUri: jwks.url, algorithms: ['RS256'] }],
        policies: { secret: { issuers: [ISSUER], scopes: ['secrets:read'] } },
        revocation: {
          ssf: {
            transmitter: transmitter.issuer,
            audience: RECEIVER,
            pollEndpoint: transmitter.pollUrl,
            pollInterval: '1h',
            emailIssuer: ISSUER,
          },
          setMaxAge: '10m',
          // This suite pushes dozens of SETs at once; the limit has its own test.
          receiverRate: '1000r/s',
        },
      },
    },
  );
  await gate.service.start();
  await gate.service.revocation!.transmitterKeys!.refresh();
  const { port } = await gate.service.listen({ kind: 'tcp', host: '127.0.0.1', port: 0 });
  pushUrl = `http://127.0.0.1:${port}/ssf/events`;
});
afterAll(async () => {
  await gate.service.stop(0);
  await transmitter.close();
  await jwks.close();
});

const seconds = () => Math.floor(Date.now() / 1000);
const iss = () => transmitter.issuer;

async function secretStatus(token: string) {
  const decision = await gate.service.authorize({
    policy: 'secret',
    authorization: `Bearer ${token}`,
  });
  return { status: statusOf(decision), reason: decision.reason };
}
const subject = (sub: string) => ({ format: 'iss_sub', iss: ISSUER, sub });

describe('push (RFC 8935)', () => {
  it("session-revoked for iss_sub: 202, and the subject's older tokens get 401", async () => {
    const older = await mintToken({ claims: { sub: 'ann' }, now: seconds() - 10 });
    expect((await secretStatus(older)).status).toBe(204);
    const answer = await transmitter.push(
      pushUrl,
      await mintSet(iss(), { claims: { sub_id: subject('ann') } }),
    );
    expect(answer.status).toBe(202);
    expect(await secretStatus(older)).toEqual({ status: 401, reason: 'token_revoked' });
    expect((await secretStatus(await mintToken({ claims: { sub: 'ben' } }))).status).toBe(204);
  });

  it('credential-change for an email subject matches only the verified email claim', async () => {
    const withEmail = await mintToken({
      claims: { sub: 'u-7', email: 'Cy@Example.com', email_verified: true },
      now: seconds() - 10,
    });
    const sameUserNoEmail = await mintToken({ claims: { sub: 'u-8' }, now: seconds() - 10 });
    const unverified = await mintToken({
      claims: { sub: 'u-9', email: 'cy@example.com', email_verified: false },
      now: seconds() - 10,
    });
    const set = await mintSet(iss(), {
      claims: {
        sub_id: { format: 'email', email: 'cy@example.com' },
        events: {
          [CAEP_CREDENTIAL_CHANGE]: {
            credential_type: 'password',
            change_type: 'update',
            event_timestamp: seconds(),
          },
        },
      },
    });
    expect((await transmitter.push(pushUrl, set)).status).toBe(202);
    expect((await secretStatus(withEmail)).reason).toBe('token_revoked');
    expect((await secretStatus(sameUserNoEmail)).status).toBe(204);
    expect((await secretStatus(unverified)).status).toBe(204);
  });

  it('RISC credential-compromise, sessions-revoked and tokens-revoked revoke the subject', async () => {
    for (const name of ['credential-compromise', 'sessions-revoked', 'tokens-revoked']) {
      const older = await mintToken({ claims: { sub: `risc-${name}` }, now: seconds() - 10 });
      const set = await mintSet(iss(), {
        claims: {
          sub_id: subject(`risc-${name}`),
          events: { [`https://schemas.openid.net/secevent/risc/event-type/${name}`]: {} },
        },
      });
      expect((await transmitter.push(pushUrl, set)).status).toBe(202);
      expect({ name, reason: (await secretStatus(older)).reason }).toEqual({
        name,
        reason: 'token_revoked',
      });
    }
  });

  it('RISC account-disabled with a complex subject revokes the user', async () => {
    const older = await mintToken({ claims: { sub: 'dee' }, now: seconds() - 10 });
    const set = await mintSet(iss(), {
      claims: {
        sub_id: { format: 'complex', user: subject('dee') },
        events: {
          'https://schemas.openid.net/secevent/risc/event-type/account-disabled': {
            reason: 'hijacking',
          },
        },
      },
    });
    expect((await transmitter.push(pushUrl, set)).status).toBe(202);
    expect((await secretStatus(older)).reason).toBe('token_revoked');
  });

  it('unknown subjects, unknown event types and the verification event: 202, nothing applied', async () => {
    const before = gate.service.revocation!.store.size;
    const sets = [
      await mintSet(iss(), { claims: { sub_id: { format: 'opaque', id: 'stream-1' } } }),
      await mintSet(iss(), {
        claims: { sub_id: { format: 'iss_sub', iss: 'https://unknown.test', sub: 'x' } },
      }),
      await mintSet(iss(), { claims: { events: { 'https://example.com/event/new-kind': {} } } }),
      await mintSet(iss(), {
        claims: {
          sub_id: { format: 'opaque', id: 'stream-1' },
          events: { [SSF_VERIFICATION]: { state: 'abc' } },
        },
      }),
    ];
    for (const set of sets) expect((await transmitter.push(pushUrl, set)).status).toBe(202);
    expect(gate.service.revocation!.store.size).toBe(before);
  });

  it('refuses a body over 16 KiB with 413, and other methods with 405', async () => {
    expect((await transmitter.push(pushUrl, 'a'.repeat(20_000))).status).toBe(413);
    expect((await fetch(pushUrl)).status).toBe(405);
  });

  it('refuses a body that is not application/secevent+jwt', async () => {
    const answer = await transmitter.push(pushUrl, await mintSet(iss()), 'application/jwt');
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ err: 'invalid_request' });
  });
});

describe('an invalid SET gets 400 with its registered err and changes nothing', () => {
  const victim = { sub_id: subject('eve') };
  const variants: Array<[string, () => Promise<string>, string]> = [
    [
      'a bad signature',
      () =>
        mintSet(iss(), { key: 'attacker', header: { kid: PRIVATE_JWKS.rsaB.kid }, claims: victim }),
      'invalid_key',
    ],
    ['an unknown key', () => mintSet(iss(), { key: 'rsaA', claims: victim }), 'invalid_key'],
    [
      'another issuer',
      () => mintSet('https://other-transmitter.test', { claims: victim }),
      'invalid_issuer',
    ],
    [
      'another audience',
      () => mintSet(iss(), { claims: { ...victim, aud: 'https://other-receiver.test/' } }),
      'invalid_audience',
    ],
    [
      'the wrong typ',
      () => mintSet(iss(), { claims: victim, header: { typ: 'JWT' } }),
      'invalid_request',
    ],
    [
      'no typ',
      () => mintSet(iss(), { claims: victim, header: { typ: undefined } }),
      'invalid_request',
    ],
    [
      'events missing',
      () => mintSet(iss(), { claims: { ...victim, events: undefined } }),
      'invalid_request',
    ],
    [
      'no event in events',
      () => mintSet(iss(), { claims: { ...victim, events: {} } }),
      'invalid_request',
    ],
    [
      'two events',
      () =>
        mintSet(iss(), {
          claims: {
            ...victim,
            events: { [CAEP_SESSION_REVOKED]: {}, [CAEP_CREDENTIAL_CHANGE]: {} },
          },
        }),
      'invalid_request',
    ],
    ['a JWT sub', () => mintSet(iss(), { claims: { ...victim, sub: 'eve' } }), 'invalid_request'],
    [
      'an exp',
      () => mintSet(iss(), { claims: { ...victim, exp: seconds() + 60 } }),
      'invalid_request',
    ],
    ['no jti', () => mintSet(iss(), { claims: { ...victim, jti: undefined } }), 'invalid_request'],
    [
      'an iat older than setMaxAge',
      () => mintSet(iss(), { claims: victim, now: seconds() - 11 * 60 }),
      'invalid_request',
    ],
    [
      'an event_timestamp later than its iat',
      () =>
        mintSet(iss(), {
          claims: {
            ...victim,
            events: { [CAEP_SESSION_REVOKED]: { event_timestamp: seconds() + 3600 } },
          },
        }),
      'invalid_request',
    ],
  ];
  for (const [name, make, err] of variants) {
    it(name, async () => {
      const set = await make();
      const held = await mintToken({ claims: { sub: 'eve' }, now: seconds() - 10 });
      const before = gate.service.revocation!.store.size;
      const answer = await transmitter.push(pushUrl, set);
      expect(answer.status).toBe(400);
      // The registered code only: why it was refused is the log's.
      expect(JSON.parse(answer.body)).toEqual({ err });
      expect(gate.service.revocation!.store.size).toBe(before);
      expect((await secretStatus(held)).status).toBe(204);
    });
  }

  it('a replayed jti', async () => {
    const first = await mintSet(iss(), { claims: { sub_id: subject('fay'), jti: 'set-once' } });
    expect((await transmitter.push(pushUrl, first)).status).toBe(202);
    const replay = await mintSet(iss(), { claims: { ...victim, jti: 'set-once' } });
    const held = await mintToken({ claims: { sub: 'eve' }, now: seconds() - 10 });
    const before = gate.service.revocation!.store.size;
    const answer = await transmitter.push(pushUrl, replay);
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toEqual({ err: 'invalid_request' });
    expect(gate.lines.some((line) => line.includes('\\"jti\\" was seen before'))).toBe(true);
    expect(gate.service.revocation!.store.size).toBe(before);
    expect((await secretStatus(held)).status).toBe(204);
  });
});

describe('the replay window', () => {
  it('remembers a SET for as long as its age lets it be accepted, then refuses it as too old', async () => {
    const clock = manualClock(Date.now() / 1000);
    const timed = buildService(
      {},
      {
        now: clock.now,
        file: {
          issuers: [
            { issuer: ISSUER, audience: AUDIENCE, jwksUri: jwks.url, algorithms: ['RS256'] },
          ],
          policies: { secret: { issuers: [ISSUER] } },
          revocation: { ssf: { transmitter: transmitter.issuer, audience: RECEIVER } },
        },
      },
    );
    await timed.service.start();
    await timed.service.revocation!.transmitterKeys!.refresh();
    const push = timed.service.routes.receivers.get('/ssf/events')!;
    const set = await mintSet(iss(), { claims: { sub_id: subject('ivy') }, now: clock.seconds() });
    const send = async () =>
      (await push({ contentType: 'application/secevent+jwt', body: set })).status;
    expect(await send()).toBe(202);
    // Past twice the logout token age (what a SET's `jti` was kept for), within the SET age.
    clock.advance(30 * 60);
    expect(await send()).toBe(400);
    expect(timed.lines.some((line) => line.includes('jti_replayed'))).toBe(true);
    // Past the SET age (1 h by default): refused for its age, whether remembered or not.
    clock.advance(31 * 60);
    expect(await send()).toBe(400);
    expect(await timed.service.metrics.render()).toMatch(
      /verifier_revocations_refused_total\{channel="ssf_push",reason="(?!jti_replayed)[a-z_]+"\} 1/,
    );
    await timed.service.stop(0);
  });
});

describe('poll (RFC 8936)', () => {
  it('applies polled SETs, acknowledges them, and reports the invalid ones in setErrs', async () => {
    const older = await mintToken({ claims: { sub: 'gus' }, now: seconds() - 10 });
    expect((await secretStatus(older)).status).toBe(204);
    transmitter.enqueue(
      'poll-1',
      await mintSet(iss(), { claims: { jti: 'poll-1', sub_id: subject('gus') } }),
    );
    transmitter.enqueue(
      'poll-bad',
      await mintSet(iss(), { claims: { jti: 'poll-bad', aud: 'someone-else' } }),
    );
    const poller = gate.service.revocation!.poller!;
    expect(await poller.pollOnce()).toBe(2);
    expect((await secretStatus(older)).reason).toBe('token_revoked');
    // The acknowledgement travels with the next poll.
    expect(await poller.pollOnce()).toBe(0);
    expect(transmitter.acked).toContain('poll-1');
    expect(transmitter.errors['poll-bad']).toMatchObject({ err: 'invalid_audience' });
    expect(transmitter.pending).toEqual([]);
  });

  it('backs off while the transmitter fails, and catches up afterwards', async () => {
    transmitter.setFailing(true);
    const poller = gate.service.revocation!.poller!;
    expect(await poller.pollOnce()).toBe(0);
    transmitter.setFailing(false);
    const older = await mintToken({ claims: { sub: 'hal' }, now: seconds() - 10 });
    transmitter.enqueue(
      'poll-2',
      await mintSet(iss(), { claims: { jti: 'poll-2', sub_id: subject('hal') } }),
    );
    expect(await poller.pollOnce()).toBe(1);
    expect((await secretStatus(older)).reason).toBe('token_revoked');
    const text = await gate.service.metrics.render();
    expect(text).toMatch(
      /verifier_revocations_applied_total\{channel="ssf_poll",event="session-revoked"\} [1-9]/,
    );
    expect(text).toMatch(
      /verifier_revocations_applied_total\{channel="ssf_push",event="credential-change"\} [1-9]/,
    );
  });
});

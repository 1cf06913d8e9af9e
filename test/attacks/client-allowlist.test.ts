// A policy that lists its clients (`clients`, VERIFIER_ALLOWED_CLIENTS) through the real NGINX:
// the listed client gets its set; every other client of the same issuer gets 403 and no set, the
// one with a set of its own and the one that would get the `default` set alike, cached or not.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startAttackStack, type Answer, type AttackStack } from './attack-stack.js';

let gate: AttackStack;

beforeAll(async () => {
  gate = await startAttackStack({
    configure: (config) => {
      const secret = config.policies.secret as { clients?: string[] };
      secret.clients = ['spa-demo'];
    },
  });
}, 120_000);

afterAll(async () => {
  await gate?.stop();
});

async function secretAs(azp: string, earned: boolean): Promise<Answer> {
  const token = await gate.stack.mintToken({ claims: { azp } });
  return gate.send({
    path: '/secret',
    headers: { authorization: `Bearer ${token}` },
    label: `client ${azp}`,
    earned,
  });
}

const hasSecret = (answer: Answer) =>
  gate.canaries.values.some((value) => answer.body.includes(value));

describe('a policy that lists its clients', () => {
  it('serves the listed client its own set', async () => {
    const answer = await secretAs('spa-demo', true);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual(gate.canaries.sets['spa-demo']);
  });

  it.each([
    ['a client with a set of its own', 'partner-app'],
    ['a client the secrets file does not name (the default set otherwise)', 'another-app'],
  ])('answers 403 and no secret to %s, every time', async (_, azp) => {
    const token = await gate.stack.mintToken({ claims: { azp } });
    for (let i = 0; i < 3; i++) {
      const answer = await gate.send({
        path: '/secret',
        headers: { authorization: `Bearer ${token}` },
        label: `client ${azp} #${i}`,
        earned: false,
      });
      expect(answer.status).toBe(403);
      expect(hasSecret(answer)).toBe(false);
      expect(answer.headers['www-authenticate']).toBeUndefined();
    }
  });

  it('logs why, with the client id and never the token', async () => {
    // The verifier's lines reach its log file through the runner's pipe: a line written as the
    // last answer went out may land a moment later.
    await vi.waitFor(
      () => {
        const log = gate
          .readLogs()
          .map(({ text }) => text)
          .join('\n');
        expect(log).toMatch(
          /"reason":"client_not_allowed".*client \\"another-app\\" is not one of/,
        );
      },
      { timeout: 3_000, interval: 100 },
    );
  });
});

describe('never leaked', () => {
  it('no secret in any answer a valid token did not earn, no token in any log line, no 500', () => {
    expect(gate.watch.scan(gate.readLogs())).toEqual([]);
    expect(gate.serverErrors).toEqual([]);
  });
});

// The DPoP step answers synchronously when nothing has to wait (a proof key seen before, replays in
// memory) and with a promise otherwise (a new proof key, a shared replay store): the same requests
// must get the same decisions either way, refusals and replays included.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Decision } from '../decision/decision.js';
import {
  AUDIENCE,
  ISSUER,
  manualClock,
  mintToken,
  startJwksServer,
  type JwksServer,
} from '../testing/fixtures.js';
import { signProof, thumbprintOf } from '../testing/dpop-proof.js';
import { buildService, type TestService } from '../testing/service.js';

// The shared store here is an in-process one that answers a tick later, as Redis would.
vi.mock('./redis-replay-store.js', async () => {
  const { createMemoryReplayStore } = await import('./replay-store.js');
  return {
    createRedisReplayStore: () => {
      const memory = createMemoryReplayStore({ maxEntries: 10_000, now: () => 0 });
      return {
        remember: (key: string, ttl: number) =>
          Promise.resolve().then(() => memory.remember(key, ttl)),
        isReady: () => true,
        close: async () => {},
      };
    },
  };
});

const clock = manualClock();
const T = clock.seconds();
const ORIGIN = 'https://gate.example.com';
const HTU = `${ORIGIN}/secret`;
const NONCE_ENV = { VERIFIER_DPOP_NONCE_KEY: 'n'.repeat(40) };
const SHARED_ENV = { ...NONCE_ENV, VERIFIER_REDIS_URL: 'redis://127.0.0.1:6379' };
let jwks: JwksServer;
let bound: string;
let unbound: string;
let nonce: string;
const started: TestService[] = [];

interface Step {
  /** The decision's reason, whichever way it was reached. */
  readonly reason: Decision['reason'];
  readonly policy?: 'allowed' | 'required';
  readonly scheme: 'Bearer' | 'DPoP';
  readonly token: () => string;
  readonly proof?: string | undefined;
  readonly method?: string;
  /** Its proof's header is refused before it is kept, so it is judged afresh: it always waits. */
  readonly waits?: boolean;
  /** It passes the proof checks, so the shared store is asked: that answer waits. */
  readonly stored?: boolean;
}

function fileConfig() {
  const issuers = [ISSUER];
  const scopes = ['secrets:read'];
  return {
    issuers: [{ issuer: ISSUER, audience: AUDIENCE, jwksUri: jwks.url, algorithms: ['RS256'] }],
    policies: {
      allowed: { issuers, scopes, dpop: 'allowed' },
      required: { issuers, scopes, dpop: 'required' },
    },
  };
}

async function startService(env: Record<string, string>): Promise<TestService> {
  const built = buildService(env, { now: clock.now, file: fileConfig() });
  await built.service.start();
  started.push(built);
  return built;
}

const ask = ({ service }: TestService, step: Omit<Step, 'reason'>): Decision | Promise<Decision> =>
  service.authorize({
    policy: step.policy ?? 'allowed',
    authorization: `${step.scheme} ${step.token()}`,
    dpop: step.proof,
    originalMethod: step.method ?? 'GET',
    originalUri: '/secret',
    originalOrigin: ORIGIN,
  });

/** Both tokens verified and cached, with no proof header seen: only the DPoP step may wait. */
async function warmTokens(built: TestService): Promise<void> {
  await ask(built, { scheme: 'Bearer', token: () => bound });
  await ask(built, { scheme: 'Bearer', token: () => unbound });
}

beforeAll(async () => {
  jwks = await startJwksServer(['rsaA']);
  bound = await mintToken({ now: T, claims: { cnf: { jkt: await thumbprintOf('ec') } } });
  unbound = await mintToken({ now: T });
  const probe = await startService(NONCE_ENV);
  const asked = await ask(probe, {
    scheme: 'DPoP',
    token: () => bound,
    proof: await signProof({ htu: HTU, accessToken: bound, iat: T }),
  });
  nonce = asked.headers?.find(([name]) => name === 'DPoP-Nonce')?.[1] ?? '';
});
afterAll(async () => {
  await Promise.all(started.map(({ service }) => service.stop(0)));
  await jwks.close();
});

const proof = (extra: Partial<Parameters<typeof signProof>[0]> = {}) =>
  signProof({ htu: HTU, accessToken: bound, iat: T, claims: { nonce }, ...extra });

/** Each case: requests in order, all by the `ec` key's header unless said. */
const cases: Array<[string, () => Promise<Step[]>]> = [
  [
    'a fresh proof, then the same proof again (a replay)',
    async () => {
      const once = await proof();
      const step = { scheme: 'DPoP', token: () => bound, proof: once, stored: true } as const;
      return [
        { ...step, reason: 'allowed' },
        { ...step, reason: 'dpop_proof_replayed' },
      ];
    },
  ],
  [
    'a proof without the server nonce',
    async () => [
      {
        reason: 'dpop_nonce_required',
        scheme: 'DPoP',
        token: () => bound,
        proof: await proof({ claims: {} }),
      },
    ],
  ],
  [
    'a proof by another key than the token is bound to',
    async () => [
      {
        reason: 'dpop_binding_mismatch',
        scheme: 'DPoP',
        token: () => bound,
        proof: await proof({ key: 'ecB' }),
        waits: true,
      },
    ],
  ],
  [
    'a proof for another method, and one outside the iat window',
    async () => [
      {
        reason: 'dpop_proof_invalid',
        scheme: 'DPoP',
        token: () => bound,
        proof: await proof({ htm: 'POST' }),
      },
      {
        reason: 'dpop_proof_invalid',
        scheme: 'DPoP',
        token: () => bound,
        proof: await proof({ iat: T - 120 }),
      },
    ],
  ],
  [
    'a proof for another access token, and one whose signature was altered',
    async () => {
      const signed = await proof();
      const at = signed.length - 10;
      const altered = `${signed.slice(0, at)}${signed[at] === 'A' ? 'B' : 'A'}${signed.slice(at + 1)}`;
      return [
        {
          reason: 'dpop_proof_invalid',
          scheme: 'DPoP',
          token: () => bound,
          proof: await proof({ accessToken: unbound }),
        },
        { reason: 'dpop_proof_invalid', scheme: 'DPoP', token: () => bound, proof: altered },
      ];
    },
  ],
  [
    'no proof, a bound token as Bearer, an unbound token as DPoP and as Bearer on a required policy',
    async () => [
      { reason: 'dpop_proof_missing', scheme: 'DPoP', token: () => bound },
      { reason: 'dpop_binding_mismatch', scheme: 'Bearer', token: () => bound },
      {
        reason: 'dpop_binding_mismatch',
        scheme: 'DPoP',
        token: () => unbound,
        proof: await proof({ accessToken: unbound }),
      },
      { reason: 'dpop_required', policy: 'required', scheme: 'Bearer', token: () => unbound },
    ],
  ],
];

describe('the DPoP step, synchronous or waiting', () => {
  it.each(cases)('answers alike either way: %s', async (_, makeSteps) => {
    const steps = await makeSteps();
    // Synchronous: the `ec` header already known (a proof of it seen), replays in memory.
    const known = await startService(NONCE_ENV);
    await warmTokens(known);
    await ask(known, { scheme: 'DPoP', token: () => bound, proof: await proof() });
    // Waiting: the shared store answers a tick later; and a proof key seen first here.
    const shared = await startService(SHARED_ENV);
    await warmTokens(shared);
    const firstKey = await startService(NONCE_ENV);
    await warmTokens(firstKey);

    for (const step of steps) {
      const now = ask(known, step);
      expect(now instanceof Promise).toBe(step.waits === true);
      const waited = ask(shared, step);
      if (step.stored) expect(waited).toBeInstanceOf(Promise);
      const decision = await now;
      expect(decision.reason).toBe(step.reason);
      expect(await waited).toEqual(decision);
      expect(await ask(firstKey, step)).toEqual(decision);
    }
  });
});

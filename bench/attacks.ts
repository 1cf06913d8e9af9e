// One address attacks while another client asks for its secret with a new token each time (so no
// cache helps it): how far the attacker raises the victim's latency, through the real stack.
//   quiet      the victim alone
//   dpop       the attacker's DPoP requests, each proof signed with an RSA key whose exponent is
//              as long as its modulus (about 9 ms of CPU per signature check, were it checked)
//   receivers  the attacker's forged logout tokens (the IdP's `kid`, another key) pushed at
//              /backchannel-logout as fast as it can
// The victim sends one request at a time, 20 a second; the attacker keeps 16 requests in flight,
// from proofs and tokens signed before the row starts (signing them during the row would load this
// process, which also times the victim).
// Addresses come from X-Forwarded-For (NGINX trusts it from loopback here), so each side has its
// own per-client limits, as two users do. Goal: the victim's p99 ≤ 100 ms in every row (reported,
// never asserted). Usage: npm run bench:attacks [-- --seconds 10]
import { createHash, generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createDpopClient } from '../perf/dpop-proofs.js';
import { startStack, type Stack } from '../stack/start-stack.js';
import { hugeExponentRsaKey, signRsaProof } from '../verifier/src/testing/dpop-proof.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '10' } } });
const SECONDS = Number(values.seconds);
const VICTIM_RATE = 20;
const ATTACKER_CONCURRENCY = 16;
const GOAL_P99_MS = 100;
const VICTIM = '203.0.113.50';
const ATTACKER = '203.0.113.66';

interface Row {
  readonly name: string;
  readonly latencies: number[];
  readonly victimStatuses: Map<number, number>;
  readonly attackerStatuses: Map<number, number>;
}

const count = (map: Map<number, number>, status: number) =>
  map.set(status, (map.get(status) ?? 0) + 1);
const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

/** The victim: a fresh token per request, one request at a time, VICTIM_RATE a second. */
async function victim(stack: Stack, tokens: string[], row: Row, until: number): Promise<void> {
  for (let next = performance.now(); performance.now() < until;) {
    const token = tokens.pop();
    if (token === undefined) throw new Error('the victim ran out of tokens');
    const started = performance.now();
    const answer = await fetch(stack.urls.secret, {
      headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': VICTIM },
    });
    await answer.arrayBuffer();
    row.latencies.push(performance.now() - started);
    count(row.victimStatuses, answer.status);
    next += 1000 / VICTIM_RATE;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - performance.now())));
  }
}

/** The attacker: ATTACKER_CONCURRENCY loops sending what `request` makes, until `until`. */
async function attacker(
  row: Row,
  until: number,
  request: () => { url: string; init: RequestInit },
): Promise<void> {
  await Promise.all(
    Array.from({ length: ATTACKER_CONCURRENCY }, async () => {
      while (performance.now() < until) {
        const { url, init } = request();
        const answer = await fetch(url, init).catch(() => undefined);
        await answer?.arrayBuffer();
        count(row.attackerStatuses, answer?.status ?? 0);
      }
    }),
  );
}

/** Proofs and tokens the attacker cycles through: each made once, before the row. */
const POOL = 2000;
const cycle = <T>(pool: readonly T[]) => {
  let next = 0;
  return () => pool[next++ % pool.length]!;
};

/** A DPoP flood: the attacker's own bound token, each proof by the slow key (another `jti`). */
async function dpopFlood(stack: Stack) {
  const client = await createDpopClient(stack.urls.issuer);
  const slow = hugeExponentRsaKey();
  const ath = createHash('sha256').update(client.token).digest('base64url');
  const proofs = Array.from({ length: POOL }, () =>
    signRsaProof(slow.privateKey, slow.jwk, {
      htu: stack.urls.secret,
      htm: 'GET',
      claims: { ath },
    }),
  );
  const proof = cycle(proofs);
  return () => ({
    url: stack.urls.secret,
    init: {
      headers: {
        authorization: `DPoP ${client.token}`,
        dpop: proof(),
        'x-forwarded-for': ATTACKER,
      },
    },
  });
}

/** Forged logout tokens: the IdP's issuer and `kid`, signed by another RSA key. */
async function receiverFlood(stack: Stack) {
  const jwks = (await (await fetch(`${stack.urls.issuer}/jwks`)).json()) as {
    keys: { kid: string }[];
  };
  const kid = jwks.keys[0]?.kid ?? 'unknown';
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const header = b64({ alg: 'RS256', kid, typ: 'logout+jwt' });
  const forge = () => {
    const payload = b64({
      iss: stack.urls.issuer,
      aud: 'spa-demo',
      sub: 'someone',
      iat: Math.floor(Date.now() / 1000),
      jti: randomUUID(),
      events: { 'http://schemas.openid.net/event/backchannel-logout': {} },
    });
    const input = `${header}.${payload}`;
    return `${input}.${sign('sha256', Buffer.from(input), privateKey).toString('base64url')}`;
  };
  const token = cycle(Array.from({ length: POOL }, forge));
  return () => ({
    url: `${stack.urls.gate}/backchannel-logout`,
    init: {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-forwarded-for': ATTACKER,
      },
      body: `logout_token=${token()}`,
    },
  });
}

function line(row: Row): string {
  const sorted = [...row.latencies].sort((a, b) => a - b);
  const statuses = (map: Map<number, number>) =>
    [...map].map(([status, n]) => `${status} × ${n}`).join(', ') || '—';
  const p99 = quantile(sorted, 0.99);
  return `| ${row.name} | ${sorted.length} | ${quantile(sorted, 0.5).toFixed(1)} | ${quantile(sorted, 0.9).toFixed(1)} | ${p99.toFixed(1)} | ${statuses(row.victimStatuses)} | ${statuses(row.attackerStatuses)} | ${p99 <= GOAL_P99_MS ? 'met' : 'MISSED'} |`;
}

async function main(): Promise<void> {
  const stack = await startStack({
    env: { nginx: { SG_REAL_IP_FROM: '127.0.0.1/32', SG_REAL_IP_HEADER: 'X-Forwarded-For' } },
  });
  try {
    const perRow = SECONDS * VICTIM_RATE + 20;
    process.stderr.write(`minting ${perRow * 3} victim tokens\n`);
    const tokens: string[] = [];
    for (let i = 0; i < perRow * 3; i++)
      tokens.push(await stack.mintToken({ clientId: 'partner-app' }));
    const attacks: Array<[string, (() => { url: string; init: RequestInit }) | undefined]> = [
      ['quiet', undefined],
      ['dpop: slow RSA proof keys', await dpopFlood(stack)],
      ['receivers: forged logout tokens', await receiverFlood(stack)],
    ];
    const rows: Row[] = [];
    for (const [name, request] of attacks) {
      const row: Row = {
        name,
        latencies: [],
        victimStatuses: new Map(),
        attackerStatuses: new Map(),
      };
      const until = performance.now() + SECONDS * 1000;
      await Promise.all([
        victim(stack, tokens, row, until),
        request === undefined ? undefined : attacker(row, until, request),
      ]);
      rows.push(row);
      // Let the attacker's buckets refill before the next row.
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
    console.log(
      [
        `victim: uncached /secret (a new token each), ${VICTIM_RATE}/s, one at a time; attacker: ${ATTACKER_CONCURRENCY} in flight; ${SECONDS} s a row`,
        '',
        `| row | victim requests | p50 ms | p90 ms | p99 ms | victim answers | attacker answers | p99 ≤ ${GOAL_P99_MS} ms |`,
        '| --- | ---: | ---: | ---: | ---: | --- | --- | --- |',
        ...rows.map(line),
      ].join('\n'),
    );
  } finally {
    await stack.stop();
  }
}

await main();

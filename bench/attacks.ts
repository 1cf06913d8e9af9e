// One address attacks while another client asks for its secret with a new token each time (so no
// cache helps it): how far the attacker raises the victim's latency, through the real stack.
//   quiet      the victim alone
//   dpop       the attacker's DPoP requests, each proof signed with an RSA key whose exponent is
//              as long as its modulus (about 9 ms of CPU per signature check, were it checked)
//   receivers  the attacker's forged logout tokens (the IdP's `kid`, another key) pushed at
//              /backchannel-logout as fast as it can
//   logouts    the IdP's address pushes 200 real logout tokens a second (each must be applied),
//              alone, then while the same address also pushes 2,000 junk pushes a second (a third
//              malformed, a third another issuer's, a third forged under the IdP's `iss` and `kid`);
//              the verifier's CPU from /proc in both rows: the difference is what the junk costs
// The victim sends one request at a time, 20 a second; the attacker keeps 16 requests in flight,
// from proofs and tokens signed before the row starts (signing them during the row would load this
// process, which also times the victim).
// Addresses come from X-Forwarded-For (NGINX trusts it from loopback here), so each side has its
// own per-client limits, as two users do. Goals: the victim's p99 ≤ 100 ms in every row; every real
// logout applied, the junk's CPU ≤ 5 % of a core and the victim's p99 within 20 % of the row
// without junk (reported, never asserted).
// Usage: npm run bench:attacks [-- --seconds 10] [--logouts-only]
import { createHash, generateKeyPairSync, randomBytes, randomUUID, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createDpopClient } from '../perf/dpop-proofs.js';
import { startStack, type Stack } from '../stack/start-stack.js';
import { hugeExponentRsaKey, signRsaProof } from '../verifier/src/testing/dpop-proof.js';

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '10' }, 'logouts-only': { type: 'boolean' } },
});
const SECONDS = Number(values.seconds);
/** `--logouts-only`: the logout rows alone (the others take a minute more). */
const LOGOUTS_ONLY = values['logouts-only'] === true;
const VICTIM_RATE = 20;
const ATTACKER_CONCURRENCY = 16;
const GOAL_P99_MS = 100;
const VICTIM = '203.0.113.50';
const ATTACKER = '203.0.113.66';
/** The IdP's address: its real logouts and the junk both come from it. */
const IDP = '203.0.113.70';
const LOGOUT_RATE = 200;
const JUNK_RATE = 2000;
const GOAL_JUNK_CPU_PERCENT = 5;
const GOAL_P99_RATIO = 1.2;

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

/**
 * Once more after a pause on a failure: an IdP connection left idle while this process signed
 * (its event loop busy) may have been closed by the IdP as it is reused.
 */
async function twice<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch {
    await new Promise((resolve) => setTimeout(resolve, 200));
    return call();
  }
}

/** Logout tokens signed by an RSA key the IdP never had, under `iss` and the IdP's `kid`. */
async function forger(stack: Stack, iss: string) {
  const jwks = (await twice(() =>
    fetch(`${stack.urls.issuer}/jwks`).then((answer) => answer.json()),
  )) as { keys: { kid: string }[] };
  const kid = jwks.keys[0]?.kid ?? 'unknown';
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const header = b64({ alg: 'RS256', kid, typ: 'logout+jwt' });
  return () => {
    const payload = b64({
      iss,
      aud: 'spa-demo',
      sub: 'someone',
      iat: Math.floor(Date.now() / 1000),
      jti: randomUUID(),
      events: { 'http://schemas.openid.net/event/backchannel-logout': {} },
    });
    const input = `${header}.${payload}`;
    return `${input}.${sign('sha256', Buffer.from(input), privateKey).toString('base64url')}`;
  };
}

/** Forged logout tokens: the IdP's issuer and `kid`, signed by another RSA key. */
async function receiverFlood(stack: Stack) {
  const forge = await forger(stack, stack.urls.issuer);
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

/** A logout push from the IdP's address. */
const logoutPush = (stack: Stack, body: string): { url: string; init: RequestInit } => ({
  url: `${stack.urls.gate}/backchannel-logout`,
  init: {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': IDP },
    body,
  },
});

/** Real logout tokens, signed by the IdP's own key for distinct users (minted before the rows). */
async function realLogouts(stack: Stack, count: number): Promise<string[]> {
  const tokens: string[] = [];
  for (let i = 0; i < count; i++)
    tokens.push(
      await twice(() =>
        stack.mintToken({
          header: { typ: 'logout+jwt' },
          claims: {
            aud: 'spa-demo',
            sub: `bench-logout-${i}`,
            jti: randomUUID(),
            events: { 'http://schemas.openid.net/event/backchannel-logout': {} },
          },
        }),
      ),
    );
  return tokens;
}

/** The junk mix: malformed, another issuer's, and forged under the IdP's `iss` and `kid`. */
async function junkPool(stack: Stack): Promise<string[]> {
  const forgeReal = await forger(stack, stack.urls.issuer);
  const forgeOther = await forger(stack, 'https://idp.attacker.test');
  return Array.from({ length: POOL }, (_, i) =>
    i % 3 === 0
      ? `logout_token=${randomBytes(40).toString('base64url')}.${randomBytes(60).toString('base64url')}`
      : `logout_token=${(i % 3 === 1 ? forgeOther : forgeReal)()}`,
  );
}

/**
 * Sends `make()` `rate` times a second until `until`, in 10 ms slices, at most 256 in flight (a
 * slot that finds them all busy is skipped and counted as not sent).
 */
async function paced(
  rate: number,
  until: number,
  make: () => { url: string; init: RequestInit } | undefined,
  statuses: Map<number, number>,
): Promise<{ sent: number; skipped: number }> {
  let inFlight = 0;
  let sent = 0;
  let skipped = 0;
  const pending = new Set<Promise<void>>();
  const started = performance.now();
  while (performance.now() < until) {
    const due = Math.floor(((performance.now() - started) / 1000) * rate);
    for (; sent + skipped < due;) {
      if (inFlight >= 256) {
        skipped++;
        continue;
      }
      const request = make();
      if (request === undefined) return { sent, skipped };
      sent++;
      inFlight++;
      const done: Promise<void> = fetch(request.url, request.init)
        .then(async (answer) => {
          await answer.arrayBuffer();
          count(statuses, answer.status);
        })
        .catch(() => void count(statuses, 0))
        .finally(() => {
          inFlight--;
          pending.delete(done);
        });
      pending.add(done);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await Promise.all(pending);
  return { sent, skipped };
}

/** CPU seconds (user + system) a process has used, from /proc/PID/stat. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime: fields 14 and 15 of stat(5), in clock ticks (100 a second on Linux).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

interface LogoutRow extends Row {
  logoutsSent: number;
  applied: number;
  junkSent: number;
  junkSkipped: number;
  /** The verifier's CPU over the row, in seconds and in % of one core. */
  cpuSeconds: number;
  cpuPercent: number;
}

/** One logout row: the victim, the IdP's real logouts and (with `junk`) the junk, together. */
async function logoutRow(
  stack: Stack,
  name: string,
  victimTokens: string[] | undefined,
  logouts: string[],
  junk: (() => string) | undefined,
): Promise<LogoutRow> {
  const row: LogoutRow = {
    name,
    latencies: [],
    victimStatuses: new Map(),
    attackerStatuses: new Map(),
    logoutsSent: 0,
    applied: 0,
    junkSent: 0,
    junkSkipped: 0,
    cpuSeconds: 0,
    cpuPercent: 0,
  };
  const pid = stack.pid('verifier');
  if (pid === undefined) throw new Error('the verifier is not running');
  const logoutStatuses = new Map<number, number>();
  const cpuBefore = cpuSeconds(pid);
  const started = performance.now();
  const until = started + SECONDS * 1000;
  const [, real, flood] = await Promise.all([
    victimTokens === undefined ? undefined : victim(stack, victimTokens, row, until),
    paced(
      LOGOUT_RATE,
      until,
      () => {
        const token = logouts.pop();
        return token === undefined ? undefined : logoutPush(stack, `logout_token=${token}`);
      },
      logoutStatuses,
    ),
    junk === undefined
      ? { sent: 0, skipped: 0 }
      : paced(JUNK_RATE, until, () => logoutPush(stack, junk()), row.attackerStatuses),
  ]);
  row.cpuSeconds = cpuSeconds(pid) - cpuBefore;
  row.cpuPercent = (row.cpuSeconds / ((performance.now() - started) / 1000)) * 100;
  row.logoutsSent = real.sent;
  row.applied = logoutStatuses.get(200) ?? 0;
  row.junkSent = flood.sent;
  row.junkSkipped = flood.skipped;
  return row;
}

function logoutLine(row: LogoutRow): string {
  const sorted = [...row.latencies].sort((a, b) => a - b);
  const statuses = [...row.attackerStatuses].map(([status, n]) => `${status} × ${n}`).join(', ');
  const p99 = sorted.length === 0 ? '—' : quantile(sorted, 0.99).toFixed(1);
  return `| ${row.name} | ${row.logoutsSent} | ${row.applied} | ${row.junkSent} (${row.junkSkipped} not sent) | ${statuses || '—'} | ${row.cpuPercent.toFixed(1)} | ${p99} |`;
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
    const victimRows = LOGOUTS_ONLY ? 2 : 5;
    process.stderr.write(`minting ${perRow * victimRows} victim tokens\n`);
    const tokens: string[] = [];
    for (let i = 0; i < perRow * victimRows; i++)
      tokens.push(await stack.mintToken({ clientId: 'partner-app' }));
    const attacks: Array<[string, (() => { url: string; init: RequestInit }) | undefined]> =
      LOGOUTS_ONLY
        ? []
        : [
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
    // Real logouts are minted last, so none is older than the receiver accepts (2 minutes).
    const needed = LOGOUT_RATE * SECONDS + 50;
    process.stderr.write(`minting ${2 * needed} real logout tokens\n`);
    const junk = cycle(await junkPool(stack));
    const alone = await logoutRow(
      stack,
      `${LOGOUT_RATE} real logouts/s`,
      tokens,
      await realLogouts(stack, needed),
      undefined,
    );
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const flooded = await logoutRow(
      stack,
      `${LOGOUT_RATE} real logouts/s + ${JUNK_RATE} junk/s, one address`,
      tokens,
      await realLogouts(stack, needed),
      junk,
    );
    await new Promise((resolve) => setTimeout(resolve, 2000));
    // The junk alone (no victim, no real logout): the verifier's CPU per junk push, which machine
    // load does not change as it changes how many pushes a loaded client manages to send.
    const junkOnly = await logoutRow(stack, `${JUNK_RATE} junk/s alone`, undefined, [], junk);
    const perPushMicros = (junkOnly.cpuSeconds / Math.max(1, junkOnly.junkSent)) * 1e6;
    const junkCpu = (perPushMicros * JUNK_RATE) / 1e4;
    const p99 = (row: Row) =>
      quantile(
        [...row.latencies].sort((a, b) => a - b),
        0.99,
      );
    const ratio = p99(flooded) / p99(alone);
    console.log(
      [
        `victim: uncached /secret (a new token each), ${VICTIM_RATE}/s, one at a time; attacker: ${ATTACKER_CONCURRENCY} in flight; ${SECONDS} s a row`,
        '',
        `| row | victim requests | p50 ms | p90 ms | p99 ms | victim answers | attacker answers | p99 ≤ ${GOAL_P99_MS} ms |`,
        '| --- | ---: | ---: | ---: | ---: | --- | --- | --- |',
        ...rows.map(line),
        '',
        `the IdP's address (${IDP}): real logouts ${LOGOUT_RATE}/s, junk ${JUNK_RATE}/s (malformed, another issuer, forged under its iss and kid); verifier CPU from /proc`,
        '',
        '| row | real logouts sent | applied (200) | junk sent | junk answers | verifier CPU % of a core | victim p99 ms |',
        '| --- | ---: | ---: | --- | --- | ---: | ---: |',
        logoutLine(alone),
        logoutLine(flooded),
        logoutLine(junkOnly),
        '',
        `real logouts applied: ${alone.applied + flooded.applied} of ${alone.logoutsSent + flooded.logoutsSent} (goal: all); the verifier's CPU per junk push ${perPushMicros.toFixed(0)} µs, so ${JUNK_RATE} junk/s cost ${junkCpu.toFixed(1)} % of a core (goal ≤ ${GOAL_JUNK_CPU_PERCENT} %): ${junkCpu <= GOAL_JUNK_CPU_PERCENT ? 'met' : 'MISSED'}; victim p99 with the junk / without ${ratio.toFixed(2)} (goal ≤ ${GOAL_P99_RATIO}): ${ratio <= GOAL_P99_RATIO ? 'met' : 'MISSED'}`,
      ].join('\n'),
    );
  } finally {
    await stack.stop();
  }
}

await main();

// One address attacks while another client asks for its secret with a new token each time (so no
// cache helps it): how far the attacker raises the victim's latency, through the real stack.
//   quiet      the victim alone
//   dpop       the attacker's DPoP requests, each proof signed with an RSA key whose exponent is
//              as long as its modulus (about 9 ms of CPU per signature check, were it checked)
//   receivers  the attacker's forged logout tokens (the IdP's `kid`, another key) pushed at
//              /backchannel-logout as fast as it can
//   logouts    the IdP's address pushes 200 real logout tokens a second (each must be applied),
//              alone, then while the same address also pushes 2,000 junk pushes a second (a third
//              malformed, a third another issuer's, a third forged under the IdP's `iss` and `kid`),
//              then the junk alone; the verifier's and NGINX's CPU from /proc in each row. In these rows each
//              client is a wrk process of its own on core 1 (the victim one connection, paced to
//              20 a second, a new token each request; the logouts (32 connections) and the junk
//              (128) paced by wrk's Lua `delay()`), the verifier on core 0, so the rows measure
//              the gate, not a client
// In the other rows the victim sends one request at a time, 20 a second; the attacker keeps 16
// requests in flight, from proofs and tokens signed before the row starts (signing them during the
// row would load this process, which also times the victim).
// The verifier listens on a unix socket, as under `npm start`.
// Addresses come from X-Forwarded-For (NGINX trusts it from loopback here), so each side has its
// own per-client limits, as two users do. Goals: the victim's p99 ≤ 100 ms in every row; every real
// logout applied, the junk's CPU ≤ 5 % of a core and the victim's p99 within 20 % of the row
// without junk (reported, never asserted).
// Usage: npm run bench:attacks [-- --seconds 10] [--logouts-only] [--no-pin]
import { createHash, generateKeyPairSync, randomBytes, randomUUID, sign } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createDpopClient } from '../perf/dpop-proofs.js';
import { createUsageSampler } from '../perf/process-stats.js';
import { startStack, type Stack } from '../stack/start-stack.js';
import { hugeExponentRsaKey, signRsaProof } from '../verifier/src/testing/dpop-proof.js';
import { lua, pacing, REPORT, runWrk, type WrkRun } from './wrk.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    'logouts-only': { type: 'boolean' },
    'no-pin': { type: 'boolean' },
  },
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
/** Seconds of victim and junk before the logout rows, not reported. */
const WARM_UP = 3;

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

/**
 * Logout tokens signed by an RSA key the IdP never had, under `iss` and the `kid` of the IdP's RSA
 * key: each one a signature check. (The set's order varies; under its EC key's `kid` an RS256
 * forgery is refused before any signature work.)
 */
async function forger(stack: Stack, iss: string) {
  const jwks = (await twice(() =>
    fetch(`${stack.urls.issuer}/jwks`).then((answer) => answer.json()),
  )) as { keys: { kid: string; kty: string }[] };
  const kid = jwks.keys.find((key) => key.kty === 'RSA')?.kid;
  if (kid === undefined) throw new Error("the dev IdP's key set holds no RSA key");
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

interface LogoutRow {
  readonly name: string;
  /** The victim's wrk (undefined: no victim in the row). */
  readonly victim: WrkRun | undefined;
  readonly logouts: WrkRun | undefined;
  readonly junk: WrkRun | undefined;
  /** NGINX's CPU over the row (master and workers), in seconds and in % of one core. */
  readonly nginxSeconds: number;
  readonly nginxPercent: number;
  /** The verifier's CPU over the row, in seconds and in % of one core. */
  readonly cpuSeconds: number;
  readonly cpuPercent: number;
}

/** Where the logout rows' clients run: wrk on core 1, the verifier on core 0 (`--no-pin`: anywhere). */
const LOAD_CPU = values['no-pin'] === true ? undefined : '1';

/**
 * Lua of a wrk client: `requests` (Lua tables of `wrk.format`'s arguments) in turn, paced to
 * `rate`. Each is formatted when sent: `wrk.format` called while the script loads makes nothing.
 */
function clientScript(dir: string, name: string, rate: number, requests: string[]): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    [
      pacing(rate),
      REPORT,
      'local requests = {',
      ...requests.map((request) => `  ${request},`),
      '}',
      'local i = 0',
      'request = function()',
      '  i = i % #requests + 1',
      '  local r = requests[i]',
      '  return wrk.format(r[1], r[2], r[3], r[4])',
      'end',
    ].join('\n'),
  );
  return path;
}

/** A POST of a form body to /backchannel-logout from the IdP's address, as Lua. */
const luaLogoutPush = (body: string) =>
  `{ "POST", "/backchannel-logout", { ["Content-Type"] = "application/x-www-form-urlencoded", ["X-Forwarded-For"] = ${lua(IDP)} }, ${lua(body)} }`;

/**
 * One logout row: the victim, the IdP's real logouts and (with `junk`) the junk, each a wrk
 * process paced to its rate, together for SECONDS; the verifier's CPU from /proc over the row.
 */
async function logoutRow(
  stack: Stack,
  dir: string,
  name: string,
  parts: { victim?: string[]; logouts?: string[]; junk?: string[] },
  seconds = SECONDS,
): Promise<LogoutRow> {
  const services = new Map(
    (['verifier', 'nginx'] as const).map((service) => {
      const pid = stack.pid(service);
      if (pid === undefined) throw new Error(`${service} is not running`);
      return [service, [pid]];
    }),
  );
  const secretPath = new URL(stack.urls.secret).pathname;
  const run = (script: string, connections: number) =>
    runWrk({ url: stack.urls.gate, script, seconds, connections, cpu: LOAD_CPU });
  const victimScript =
    parts.victim &&
    clientScript(
      dir,
      'victim.lua',
      VICTIM_RATE,
      parts.victim.map(
        (token) =>
          `{ "GET", ${lua(secretPath)}, { ["Authorization"] = ${lua(`Bearer ${token}`)}, ["X-Forwarded-For"] = ${lua(VICTIM)} } }`,
      ),
    );
  const logoutScript =
    parts.logouts &&
    clientScript(
      dir,
      'logouts.lua',
      LOGOUT_RATE,
      parts.logouts.map((token) => luaLogoutPush(`logout_token=${token}`)),
    );
  const junkScript =
    parts.junk && clientScript(dir, 'junk.lua', JUNK_RATE, parts.junk.map(luaLogoutPush));
  // The verifier's process, and NGINX's master with its workers.
  const sampler = createUsageSampler(services);
  const [victim, logouts, junk] = await Promise.all([
    victimScript === undefined ? undefined : run(victimScript, 1),
    logoutScript === undefined ? undefined : run(logoutScript, 32),
    junkScript === undefined ? undefined : run(junkScript, 128),
  ]);
  const usage = new Map(sampler.stop().map((used) => [used.name, used]));
  const { cpuSeconds, wallSeconds } = usage.get('verifier')!;
  const nginxSeconds = usage.get('nginx')!.cpuSeconds;
  return {
    name,
    victim,
    logouts,
    junk,
    cpuSeconds,
    cpuPercent: (cpuSeconds / wallSeconds) * 100,
    nginxSeconds,
    nginxPercent: (nginxSeconds / wallSeconds) * 100,
  };
}

function logoutLine(row: LogoutRow): string {
  const statuses = (run: WrkRun | undefined) =>
    run === undefined ? '—' : [...run.statuses].map(([status, n]) => `${status} × ${n}`).join(', ');
  const rate = (run: WrkRun | undefined) =>
    run === undefined ? '—' : (run.requests / run.seconds).toFixed(0);
  return `| ${row.name} | ${row.logouts?.requests ?? 0} | ${row.logouts?.statuses.get(200) ?? 0} | ${row.junk?.requests ?? 0} (${rate(row.junk)}/s) | ${statuses(row.junk)} | ${row.cpuPercent.toFixed(1)} | ${row.nginxPercent.toFixed(1)} | ${row.victim?.p99.toFixed(1) ?? '—'} |`;
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
    // As `npm start` runs it: the verifier on a unix socket only NGINX's user reaches.
    verifierSocket: true,
    env: { nginx: { SG_REAL_IP_FROM: '127.0.0.1/32', SG_REAL_IP_HEADER: 'X-Forwarded-For' } },
  });
  try {
    const perRow = SECONDS * VICTIM_RATE + 20;
    // The in-process rows and the two logout rows with a victim, and the logout rows' warm-up.
    const victimTokens = perRow * ((LOGOUTS_ONLY ? 0 : 3) + 2) + WARM_UP * VICTIM_RATE;
    process.stderr.write(`minting ${victimTokens} victim tokens\n`);
    const tokens: string[] = [];
    for (let i = 0; i < victimTokens; i++)
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
    // Real logouts are minted last, so none is older than the receiver accepts (2 minutes). A
    // tenth more than the row sends, so wrk never wraps around to a replay.
    const needed = Math.ceil(LOGOUT_RATE * SECONDS * 1.1);
    process.stderr.write(`minting ${2 * needed} real logout tokens\n`);
    const junk = await junkPool(stack);
    const pid = stack.pid('verifier');
    if (pid !== undefined && values['no-pin'] !== true)
      spawnSync('taskset', ['-a', '-p', '-c', '0', String(pid)], { stdio: 'ignore' });
    const dir = mkdtempSync(join(tmpdir(), 'attacks-'));
    const rowTokens = () => tokens.splice(0, perRow);
    // A few seconds of the victim and the junk first, not reported: the verifier's JIT settles on
    // both paths before the rows compare them.
    await logoutRow(
      stack,
      dir,
      'warm-up',
      { victim: tokens.splice(0, WARM_UP * VICTIM_RATE), junk },
      WARM_UP,
    );
    const alone = await logoutRow(stack, dir, `${LOGOUT_RATE} real logouts/s`, {
      victim: rowTokens(),
      logouts: await realLogouts(stack, needed),
    });
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const flooded = await logoutRow(
      stack,
      dir,
      `${LOGOUT_RATE} real logouts/s + ${JUNK_RATE} junk/s, one address`,
      { victim: rowTokens(), logouts: await realLogouts(stack, needed), junk },
    );
    await new Promise((resolve) => setTimeout(resolve, 2000));
    // The junk alone (no victim, no real logout): the verifier's CPU for 2,000 junk pushes a second.
    const junkOnly = await logoutRow(stack, dir, `${JUNK_RATE} junk/s alone`, { junk });
    rmSync(dir, { recursive: true, force: true });
    const junkSent = Math.max(1, junkOnly.junk?.requests ?? 0);
    const perPushMicros = (junkOnly.cpuSeconds / junkSent) * 1e6;
    const junkCpu = (perPushMicros * JUNK_RATE) / 1e4;
    const nginxPerPushMicros = (junkOnly.nginxSeconds / junkSent) * 1e6;
    const ratio = (flooded.victim?.p99 ?? Number.NaN) / (alone.victim?.p99 ?? Number.NaN);
    const applied = [alone, flooded].reduce(
      (n, row) => n + (row.logouts?.statuses.get(200) ?? 0),
      0,
    );
    const sent = [alone, flooded].reduce((n, row) => n + (row.logouts?.requests ?? 0), 0);
    console.log(
      [
        ...(rows.length === 0
          ? []
          : [
              `victim: uncached /secret (a new token each), ${VICTIM_RATE}/s, one at a time; attacker: ${ATTACKER_CONCURRENCY} in flight; ${SECONDS} s a row`,
              '',
              `| row | victim requests | p50 ms | p90 ms | p99 ms | victim answers | attacker answers | p99 ≤ ${GOAL_P99_MS} ms |`,
              '| --- | ---: | ---: | ---: | ---: | --- | --- | --- |',
              ...rows.map(line),
              '',
            ]),
        `the IdP's address (${IDP}): real logouts ${LOGOUT_RATE}/s, junk ${JUNK_RATE}/s (malformed, another issuer, forged under its iss and kid), each a wrk process${LOAD_CPU === undefined ? '' : ` on cpu ${LOAD_CPU}`}, paced; the victim a wrk process of its own (one connection, ${VICTIM_RATE}/s, a new token each); ${LOAD_CPU === undefined ? 'nothing pinned' : 'verifier on cpu 0'}; the verifier's and NGINX's CPU from /proc`,
        '',
        '| row | real logouts sent | applied (200) | junk sent | junk answers | verifier CPU % of a core | NGINX CPU % of a core | victim p99 ms |',
        '| --- | ---: | ---: | --- | --- | ---: | ---: | ---: |',
        logoutLine(alone),
        logoutLine(flooded),
        logoutLine(junkOnly),
        '',
        `victim p50/p90/p99 ms: without the junk ${[alone.victim?.p50, alone.victim?.p90, alone.victim?.p99].map((v) => v?.toFixed(1)).join('/')}, with it ${[flooded.victim?.p50, flooded.victim?.p90, flooded.victim?.p99].map((v) => v?.toFixed(1)).join('/')}`,
        `real logouts applied: ${applied} of ${sent} (goal: all); the verifier's CPU per junk push ${perPushMicros.toFixed(0)} µs, so ${JUNK_RATE} junk/s cost ${junkCpu.toFixed(1)} % of a core (goal ≤ ${GOAL_JUNK_CPU_PERCENT} %): ${junkCpu <= GOAL_JUNK_CPU_PERCENT ? 'met' : 'MISSED'}; NGINX's CPU per junk push ${nginxPerPushMicros.toFixed(0)} µs; victim p99 with the junk / without ${ratio.toFixed(2)} (goal ≤ ${GOAL_P99_RATIO}): ${ratio <= GOAL_P99_RATIO ? 'met' : 'MISSED'}`,
      ].join('\n'),
    );
  } finally {
    await stack.stop();
  }
}

await main();

// `npm run bench:receiver-junk`: the verifier's own CPU per junk push, straight to its port (no
// NGINX, no client in the process): an in-process verifier with a logout receiver, wrk (another
// process) POSTing junk, process CPU from `process.cpuUsage()` over the run divided by the pushes
// wrk completed. The junk comes by kind: `malformed` (random segments), `issuer` (another
// issuer's token), `kid` (the receiver's issuer, a made-up `kid`), `forged` (the receiver's issuer
// and its real `kid`, signed by another key), or `mix` (a quarter of each, one row). Beside them,
// in the same process and the same rounds, the floor: a bare uWebSockets.js POST route that reads
// the body and answers 400 (what any receiver pays while each push is its own HTTP request); and
// beside `forged`, the bare `crypto.verify` of the same forgeries in this process (the RSA check
// no receiver may skip). The figure is CPU time, so it holds better than wall time on a loaded
// machine; compare builds side by side.
// This process is pinned to core 0 and wrk to core 1 (as bench/tracing.ts does).
//   --kinds LIST     (default mix) rows of junk, comma-separated: mix,malformed,issuer,kid,forged
//   --seconds N      (default 4) a run
//   --rounds N       (default 3) rounds of the rows, interleaved; the medians are reported
//   --connections N  (default 8)
//   --rate N         pushes a second, paced by wrk (default: as fast as wrk can)
//   --no-pin         no taskset
// `--count`: instructions instead of time, which do not move with the machine's load: the same
// verifier and floor in a child process under `valgrind --tool=callgrind` (with a JWKS cooldown
// longer than the run, so a made-up `kid` refetches nothing inside a count), and for each row
// `--warm-up N` pushes (default 3,000), `callgrind_control --zero`, `--requests N` pushes (default
// 1,000) one after another on one kept-alive connection, `--dump`: the dump's total ÷ N (user space
// of every thread: JIT code, GC, uWS, libc; not the kernel). With `forged`, a last row: the floor
// doing the bare `crypto.verify` of each forgery before its 400 (a forgery with no receiver code).
import { spawnSync } from 'node:child_process';
import { createPublicKey, randomBytes, verify } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { HttpResponse } from 'uWebSockets.js';
import { loadUws } from '../verifier/src/http/uws-addon.js';
import { mintLogoutToken } from '../verifier/src/testing/event-tokens.js';
import {
  AUDIENCE,
  ISSUER,
  PRIVATE_JWKS,
  startJwksServer,
} from '../verifier/src/testing/fixtures.js';
import { logoutIssuer } from '../verifier/src/testing/replicas.js';
import { buildService } from '../verifier/src/testing/service.js';
import { startMeasuredProcess, type MeasuredProcess } from '../perf/measured-process.js';
import { lua, pacing, REPORT, runWrk } from './wrk.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '4' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '8' },
    rate: { type: 'string' },
    kinds: { type: 'string', default: 'mix' },
    'no-pin': { type: 'boolean' },
    count: { type: 'boolean' },
    'warm-up': { type: 'string', default: '3000' },
    requests: { type: 'string', default: '1000' },
    // The child of `--count`: only the two servers, their ports on stdout.
    serve: { type: 'boolean' },
  },
});
const POOL = 300;
const LOGOUT = '/backchannel-logout';
const BARE_VERIFY = '/bare-verify';
const PIN = values['no-pin'] !== true && values.count !== true && values.serve !== true;
const LOAD_CPU = PIN ? '1' : undefined;
if (PIN) spawnSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });

/** The junk by kind: a forger's first tries, then a forgery under the real key's `kid`. */
const KINDS = {
  malformed: undefined,
  issuer: { claims: { iss: 'https://idp.attacker.test' }, key: 'attacker' as const },
  kid: { key: 'attacker' as const, header: { kid: 'made-up' } },
  forged: { key: 'attacker' as const, header: { kid: PRIVATE_JWKS.rsaA.kid } },
};
type Kind = keyof typeof KINDS;
const kindNames = Object.keys(KINDS) as Kind[];
const asked = values.kinds.split(',').map((name) => name.trim());
for (const name of asked)
  if (name !== 'mix' && !(kindNames as string[]).includes(name))
    throw new TypeError(`--kinds: "${name}" is not one of mix, ${kindNames.join(', ')}`);

/** `POOL` tokens of one kind (the mix: the kinds in turn). */
async function tokensOf(name: Kind | 'mix'): Promise<string[]> {
  const tokens: string[] = [];
  for (let i = 0; i < POOL; i++) {
    const kind = name === 'mix' ? kindNames[i % kindNames.length]! : name;
    const options = KINDS[kind];
    tokens.push(
      options === undefined
        ? `${randomBytes(40).toString('base64url')}.${randomBytes(60).toString('base64url')}`
        : await mintLogoutToken(options),
    );
  }
  return tokens;
}
const pools = new Map<string, string[]>();
// The servers of `--count` send nothing.
if (values.serve !== true)
  for (const name of asked) pools.set(name, await tokensOf(name as Kind | 'mix'));

/** A push of `body`, as bytes on the wire. */
const pushBytes = (path: string, body: string) =>
  Buffer.from(
    `POST ${path} HTTP/1.1\r\nHost: gate.test\r\n` +
      'Content-Type: application/x-www-form-urlencoded\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );

/** `count` pushes of `tokens` in turn to `path`, one after another on one kept-alive connection. */
function sendPushes(
  target: number,
  path: string,
  tokens: readonly string[],
  count: number,
): Promise<void> {
  const requests = tokens.map((token) => pushBytes(path, `logout_token=${token}`));
  return new Promise<void>((resolve, reject) => {
    const socket = connect(target, '127.0.0.1');
    let sent = 0;
    let seen = '';
    const next = () => {
      if (sent === count) return socket.end(() => resolve());
      socket.write(requests[sent++ % requests.length]!);
    };
    socket.setEncoding('latin1');
    socket.on('connect', next);
    socket.on('error', reject);
    socket.on('data', (chunk: string) => {
      seen += chunk;
      for (;;) {
        const end = seen.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = seen.slice(0, end);
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (seen.length < end + 4 + length) return;
        if (!/^HTTP\/1\.1 4(00|29) /.test(head)) return reject(new Error(`answered ${head}`));
        seen = seen.slice(end + 4 + length);
        next();
      }
    });
  });
}

/** `--count`: instructions per push of each row, the servers under callgrind in a child. */
async function counted(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'receiver-junk-count-'));
  let servers: MeasuredProcess | undefined;
  try {
    servers = await startMeasuredProcess({
      name: 'the servers under callgrind',
      command: process.execPath,
      args: ['--import', 'tsx', fileURLToPath(import.meta.url), '--serve'],
      callgrind: { dir, jit: true },
      ready: { line: /PORTS (\d+) (\d+)/ },
      readyTimeoutMs: 300_000,
      stopSignal: 'SIGKILL',
    });
    const gatePort = Number(servers.readyMatch![1]);
    const floorPort = Number(servers.readyMatch![2]);
    const warmUp = Number(values['warm-up']);
    const requests = Number(values.requests);
    type Row = [name: string, port: number, path: string, tokens: readonly string[]];
    const rows: Row[] = [
      ['bare uWS POST → 400 (floor)', floorPort, LOGOUT, pools.values().next().value!],
      ...[...pools].map(([name, tokens]): Row => [LABELS[name]!, gatePort, LOGOUT, tokens]),
    ];
    const forged = pools.get('forged');
    if (forged !== undefined)
      rows.push([
        '… the floor + the bare `crypto.verify` of the same forgeries',
        floorPort,
        BARE_VERIFY,
        forged,
      ]);
    const counts: number[] = [];
    for (const [index, [, target, path, tokens]] of rows.entries()) {
      await sendPushes(target, path, tokens, warmUp);
      await servers.zero();
      await sendPushes(target, path, tokens, requests);
      counts.push((await servers.dump(`row${index}`)) / requests);
    }
    const floor = counts[0]!;
    console.log(
      [
        `instructions per push (callgrind, user space), ${warmUp} pushes of warm-up and ${requests} counted per row, one kept-alive connection`,
        '',
        '| row | instructions per push | above the floor |',
        '| --- | ---: | ---: |',
        ...rows.map(
          ([name], i) =>
            `| ${name} | ${Math.round(counts[i]!).toLocaleString('en')} | ${i === 0 ? '—' : Math.round(counts[i]! - floor).toLocaleString('en')} |`,
        ),
      ].join('\n'),
    );
  } finally {
    await servers?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const LABELS: Record<string, string> = {
  mix: 'logout receiver, the junk mix',
  malformed: 'logout receiver, malformed',
  issuer: "logout receiver, another issuer's token",
  kid: "logout receiver, the issuer's `iss`, a made-up `kid`",
  forged: "logout receiver, forged under the issuer's real `kid`",
};

if (values.count === true) {
  await counted();
  process.exit(0);
}

const jwks = await startJwksServer(['rsaA']);
const gate = buildService(
  // The budget of failed signature checks as the default stack has it: the forgeries spend it.
  // Counted, no refetch for a made-up `kid` inside a row (at callgrind's pace 30 s is a few rows).
  values.serve === true ? { VERIFIER_JWKS_COOLDOWN: '3600s' } : {},
  {
    file: {
      issuers: [
        logoutIssuer(jwks.url),
        { issuer: 'https://other.test', audience: AUDIENCE, jwksUri: jwks.url },
      ],
      policies: { secret: { issuers: [ISSUER], scopes: ['secrets:read'] } },
    },
  },
);
await gate.service.start();
const port = await gate.service
  .listen({ kind: 'tcp', host: '127.0.0.1', port: 0 })
  .then((p) => p.port);

/** The floor: a POST route that reads the body and answers 400, nothing else. */
const uws = loadUws();
const bare = uws.App();
bare.post('/backchannel-logout', (res: HttpResponse & { aborted?: boolean }) => {
  res.onAborted(() => (res.aborted = true));
  res.onData((_chunk, isLast) => {
    if (!isLast || res.aborted === true) return;
    res.cork(() =>
      res
        .writeStatus('400 Bad Request')
        .writeHeader('Content-Type', 'application/json')
        .writeHeader('Cache-Control', 'no-store')
        .end('{"error":"invalid_request"}'),
    );
  });
});
/**
 * The floor plus the bare `crypto.verify` of the pushed token under the receiver's real key (a
 * forgery: false), then the same 400: what a forgery costs with no receiver code (`--count`).
 */
const realKey = createPublicKey({ key: PRIVATE_JWKS.rsaA, format: 'jwk' });
bare.post(BARE_VERIFY, (res: HttpResponse & { aborted?: boolean }) => {
  res.onAborted(() => (res.aborted = true));
  res.onData((chunk, isLast) => {
    if (!isLast || res.aborted === true) return;
    const token = Buffer.from(chunk).toString('latin1').slice('logout_token='.length);
    const dot = token.lastIndexOf('.');
    const valid = verify(
      'sha256',
      Buffer.from(token.slice(0, dot), 'latin1'),
      realKey,
      Buffer.from(token.slice(dot + 1), 'base64url'),
    );
    res.cork(() =>
      res
        .writeStatus(valid ? '200 OK' : '400 Bad Request')
        .writeHeader('Content-Type', 'application/json')
        .writeHeader('Cache-Control', 'no-store')
        .end('{"error":"invalid_request"}'),
    );
  });
});
const barePort = await new Promise<number>((resolve, reject) =>
  bare.listen('127.0.0.1', 0, (socket) =>
    socket === false
      ? reject(new Error('cannot listen'))
      : resolve(uws.us_socket_local_port(socket)),
  ),
);

if (values.serve === true) {
  console.log(`PORTS ${port} ${barePort}`);
  // Until the parent kills it.
  await new Promise(() => undefined);
}

const dir = mkdtempSync(join(tmpdir(), 'receiver-junk-'));
/** The script: `tokens` in turn, paced to `rate` a second (undefined: as fast as wrk can). */
const scriptOf = (name: string, tokens: readonly string[], rate: number | undefined) => {
  const path = join(dir, name);
  writeFileSync(
    path,
    [
      rate === undefined ? '' : pacing(rate),
      REPORT,
      'local bodies = {',
      ...tokens.map((token) => `  ${lua(`logout_token=${token}`)},`),
      '}',
      'local i = 0',
      'request = function()',
      '  i = i % #bodies + 1',
      '  return wrk.format("POST", "/backchannel-logout", { ["Content-Type"] = "application/x-www-form-urlencoded" }, bodies[i])',
      'end',
    ].join('\n'),
  );
  return path;
};
const rate = values.rate === undefined ? undefined : Number(values.rate);
const scripts = new Map(
  [...pools].map(([name, tokens]) => [
    name,
    {
      warm: scriptOf(`${name}-warm.lua`, tokens, undefined),
      measured: scriptOf(`${name}.lua`, tokens, rate),
    },
  ]),
);
const floorScript = scripts.values().next().value!;

/**
 * The bare `crypto.verify` of the forgeries, in this process: CPU µs per check over `count`
 * checks (each an RSA-2048 PKCS #1 v1.5 verify under the real key, which fails).
 */
const forgeries = (pools.get('forged') ?? []).map((token) => {
  const dot = token.lastIndexOf('.');
  return {
    input: Buffer.from(token.slice(0, dot), 'latin1'),
    signature: Buffer.from(token.slice(dot + 1), 'base64url'),
  };
});
function bareVerify(count: number): { user: number; system: number } {
  const before = process.cpuUsage();
  let valid = 0;
  for (let i = 0; i < count; i++) {
    const { input, signature } = forgeries[i % forgeries.length]!;
    if (verify('sha256', input, realKey, signature)) valid++;
  }
  const used = process.cpuUsage(before);
  if (valid !== 0) throw new Error('a forgery verified');
  return { user: used.user / count, system: used.system / count };
}

interface Figures {
  readonly pushes: number;
  readonly rate: number;
  readonly user: number;
  readonly system: number;
  readonly statuses: string;
}

/** One run of wrk at `port`: this process's CPU per push answered. */
async function row(target: number, seconds: number, script: string): Promise<Figures> {
  const before = process.cpuUsage();
  const run = await runWrk({
    url: `http://127.0.0.1:${target}/`,
    script,
    seconds,
    connections: Number(values.connections),
    cpu: LOAD_CPU,
  });
  const used = process.cpuUsage(before);
  const pushes = Math.max(1, run.requests);
  return {
    pushes: run.requests,
    rate: run.requests / run.seconds,
    user: used.user / pushes,
    system: used.system / pushes,
    statuses: [...run.statuses].map(([status, n]) => `${status} × ${n}`).join(', '),
  };
}

const median = (numbers: number[]) => {
  const sorted = [...numbers].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};
const seconds = Number(values.seconds);
// A warm-up of each as fast as wrk can (the JIT settled, the key set fetched once), then the
// rounds, interleaved: the floor, then each kind in turn.
await row(barePort, 2, floorScript.warm);
for (const { warm } of scripts.values()) await row(port, 2, warm);
if (forgeries.length > 0) bareVerify(2_000);
const floor: Figures[] = [];
const kinds = new Map([...scripts.keys()].map((name) => [name, [] as Figures[]]));
const crypto: { user: number; system: number }[] = [];
for (let round = 0; round < Number(values.rounds); round++) {
  floor.push(await row(barePort, seconds, floorScript.measured));
  for (const [name, { measured }] of scripts)
    kinds.get(name)!.push(await row(port, seconds, measured));
  if (forgeries.length > 0) crypto.push(bareVerify(4_000));
}
const us = (n: number) => n.toFixed(1);
const line = (name: string, figures: Figures[]) => {
  const total = median(figures.map((f) => f.user + f.system));
  return `| ${name} | ${median(figures.map((f) => f.rate)).toFixed(0)} | ${us(total)} | ${us(median(figures.map((f) => f.user)))} | ${us(median(figures.map((f) => f.system)))} | ${figures.map((f) => us(f.user + f.system)).join(', ')} | ${figures.at(-1)?.statuses ?? ''} |`;
};
const rows = [line('bare uWS POST → 400 (floor)', floor)];
for (const [name, figures] of kinds) {
  rows.push(line(LABELS[name]!, figures));
  if (name === 'forged' && crypto.length > 0) {
    const each = crypto.map((c) => c.user + c.system);
    rows.push(
      `| … of it: bare \`crypto.verify\` of the same forgeries, in-process | — | ${us(median(each))} | ${us(median(crypto.map((c) => c.user)))} | ${us(median(crypto.map((c) => c.system)))} | ${each.map(us).join(', ')} | — |`,
    );
  }
}
const [load1, load5] = loadavg();
console.log(
  [
    `wrk -t1 -c${values.connections} ${rate === undefined ? 'as fast as it can' : `paced to ${rate}/s`}, ${values.seconds} s a run, ${values.rounds} rounds${PIN ? '; this process on cpu 0, wrk on cpu 1' : ''}; medians; load average ${load1!.toFixed(2)} (1 min), ${load5!.toFixed(2)} (5 min) at the end`,
    '',
    '| row | pushes/s | µs CPU per push | user | system | each round | answers (last round) |',
    '| --- | ---: | ---: | ---: | ---: | --- | --- |',
    ...rows,
  ].join('\n'),
);
rmSync(dir, { recursive: true, force: true });
bare.close();
await gate.service.stop(0);
await jwks.close();

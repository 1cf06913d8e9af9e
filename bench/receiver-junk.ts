// `npm run bench:receiver-junk`: the verifier's own CPU per junk push, straight to its port (no
// NGINX, no client in the process): an in-process verifier with a logout receiver, wrk (another
// process) POSTing junk (a quarter malformed, a quarter another issuer's, a quarter under the
// receiver's issuer with a made-up `kid`, a quarter forged under its real `kid`), process CPU from
// `process.cpuUsage()` over the run divided by the pushes wrk completed. Beside it, in the same
// process and the same rounds, the floor: a bare uWebSockets.js POST route that reads the body and
// answers 400 (what any receiver pays while each push is its own HTTP request). The figure is CPU
// time, so it holds better than wall time on a loaded machine; compare builds side by side.
// This process is pinned to core 0 and wrk to core 1 (as bench/tracing.ts does).
//   --seconds N      (default 4) a run
//   --rounds N       (default 3) rounds of the two rows, interleaved; the medians are reported
//   --connections N  (default 8)
//   --rate N         pushes a second, paced by wrk (default: as fast as wrk can)
//   --no-pin         no taskset
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
import { lua, pacing, REPORT, runWrk } from './wrk.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '4' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '8' },
    rate: { type: 'string' },
    'no-pin': { type: 'boolean' },
  },
});
const POOL = 300;
const PIN = values['no-pin'] !== true;
const LOAD_CPU = PIN ? '1' : undefined;
if (PIN) spawnSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });

const jwks = await startJwksServer(['rsaA']);
const gate = buildService(
  // The budget of failed signature checks as the default stack has it: the forgeries spend it.
  {},
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
const barePort = await new Promise<number>((resolve, reject) =>
  bare.listen('127.0.0.1', 0, (socket) =>
    socket === false
      ? reject(new Error('cannot listen'))
      : resolve(uws.us_socket_local_port(socket)),
  ),
);

/** The junk kinds in turn: a forger's first tries, then a forgery under the real key's `kid`. */
const kinds = [
  undefined,
  { claims: { iss: 'https://idp.attacker.test' }, key: 'attacker' as const },
  { key: 'attacker' as const, header: { kid: 'made-up' } },
  { key: 'attacker' as const, header: { kid: PRIVATE_JWKS.rsaA.kid } },
];
const bodies: string[] = [];
for (let i = 0; i < POOL; i++) {
  const kind = kinds[i % kinds.length];
  bodies.push(
    kind === undefined
      ? `logout_token=${randomBytes(40).toString('base64url')}.${randomBytes(60).toString('base64url')}`
      : `logout_token=${await mintLogoutToken(kind)}`,
  );
}

const dir = mkdtempSync(join(tmpdir(), 'receiver-junk-'));
/** The script: the pool in turn, paced to `rate` a second (undefined: as fast as wrk can). */
const scriptOf = (name: string, rate: number | undefined) => {
  const path = join(dir, name);
  writeFileSync(
    path,
    [
      rate === undefined ? '' : pacing(rate),
      REPORT,
      'local bodies = {',
      ...bodies.map((body) => `  ${lua(body)},`),
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
const warm = scriptOf('warm.lua', undefined);
const measured = scriptOf('junk.lua', values.rate === undefined ? undefined : Number(values.rate));

interface Figures {
  readonly pushes: number;
  readonly rate: number;
  readonly user: number;
  readonly system: number;
  readonly statuses: string;
}

/** One run of wrk at `port`: this process's CPU per push answered. */
async function row(target: number, seconds: number, script = measured): Promise<Figures> {
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
// A warm-up of both as fast as wrk can (the JIT settled, the key set fetched once), then the
// rounds, interleaved.
await row(barePort, 2, warm);
await row(port, 2, warm);
const rows = { floor: [] as Figures[], receiver: [] as Figures[] };
for (let round = 0; round < Number(values.rounds); round++) {
  rows.floor.push(await row(barePort, seconds));
  rows.receiver.push(await row(port, seconds));
}
const line = (name: string, figures: Figures[]) => {
  const total = median(figures.map((f) => f.user + f.system));
  return `| ${name} | ${median(figures.map((f) => f.rate)).toFixed(0)} | ${total.toFixed(1)} | ${median(figures.map((f) => f.user)).toFixed(1)} | ${median(figures.map((f) => f.system)).toFixed(1)} | ${figures.map((f) => (f.user + f.system).toFixed(1)).join(', ')} | ${figures.at(-1)?.statuses ?? ''} |`;
};
console.log(
  [
    `wrk -t1 -c${values.connections} ${values.rate === undefined ? 'as fast as it can' : `paced to ${values.rate}/s`}, ${values.seconds} s a run, ${values.rounds} rounds${PIN ? '; this process on cpu 0, wrk on cpu 1' : ''}; medians`,
    '',
    '| row | pushes/s | µs CPU per push | user | system | each round | answers (last round) |',
    '| --- | ---: | ---: | ---: | ---: | --- | --- |',
    line('bare uWS POST → 400 (floor)', rows.floor),
    line('logout receiver, the junk mix', rows.receiver),
  ].join('\n'),
);
rmSync(dir, { recursive: true, force: true });
bare.close();
await gate.service.stop(0);
await jwks.close();

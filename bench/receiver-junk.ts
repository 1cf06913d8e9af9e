// `npm run bench:receiver-junk`: the verifier's own CPU per junk push, straight to its port (no
// NGINX, no client in the process): an in-process verifier with a logout receiver, wrk (another
// process) POSTing junk (a quarter malformed, a quarter another issuer's, a quarter under the
// receiver's issuer with a made-up `kid`, a quarter forged under its real `kid`), process CPU from
// `process.cpuUsage()` over the run divided by the pushes wrk completed. The figure is CPU
// time, so it holds better than wall time on a loaded machine; compare builds side by side.
//   --seconds N  (default 5)   --connections N (default 8)
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { mintLogoutToken } from '../verifier/src/testing/event-tokens.js';
import {
  AUDIENCE,
  ISSUER,
  PRIVATE_JWKS,
  startJwksServer,
} from '../verifier/src/testing/fixtures.js';
import { logoutIssuer } from '../verifier/src/testing/replicas.js';
import { buildService } from '../verifier/src/testing/service.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '8' },
  },
});
const POOL = 300;

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
const script = join(dir, 'junk.lua');
writeFileSync(
  script,
  [
    'local bodies = {',
    ...bodies.map((body) => `  "${body}",`),
    '}',
    'local i = 0',
    'request = function()',
    '  i = i % #bodies + 1',
    '  return wrk.format("POST", "/backchannel-logout", { ["Content-Type"] = "application/x-www-form-urlencoded" }, bodies[i])',
    'end',
    'done = function(summary, latency, requests)',
    '  io.write(string.format("REQUESTS %d\\n", summary.requests))',
    'end',
  ].join('\n'),
);

/** wrk in a child process (the verifier answers on this process's loop meanwhile). */
function runWrk(): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('wrk', [
      '-t1',
      `-c${values.connections}`,
      `-d${values.seconds}s`,
      '-s',
      script,
      `http://127.0.0.1:${port}/`,
    ]);
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('close', () => resolve(out));
  });
}

// A short warm-up (the JIT, the key set fetched once), then the measured run.
await runWrk();
const before = process.cpuUsage();
const out = await runWrk();
const used = process.cpuUsage(before);
const requests = Number(/REQUESTS (\d+)/.exec(out)?.[1] ?? 0);
const micros = (used.user + used.system) / Math.max(1, requests);
const statuses = /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? '0';
const per = (micros: number) => (micros / Math.max(1, requests)).toFixed(1);
console.log(
  `junk pushes ${requests} (refused ${statuses}), verifier CPU ${((used.user + used.system) / 1e3).toFixed(0)} ms: ${micros.toFixed(1)} µs per push (user ${per(used.user)}, system ${per(used.system)})`,
);
rmSync(dir, { recursive: true, force: true });
await gate.service.stop(0);
await jwks.close();

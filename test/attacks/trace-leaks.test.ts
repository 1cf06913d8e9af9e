// No token, proof, key or secret value in any span or log line, with every request traced: the
// attack token table, forged and valid DPoP proofs and every secret set go through real NGINX
// (SG_TRACE_CONTEXT on, 100 % sampled) to the verifier exporting OTLP http/protobuf to a receiver
// in this process. Then every exported span (names, attributes, events, status), the raw export
// bytes, the verifier's log and NGINX's access and error logs are searched for each value and for
// each of a token's or proof's parts.
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../stack/ports.js';
import {
  hmacProof,
  privateProofJwk,
  signProof,
  unsignedProof,
} from '../../verifier/src/testing/dpop-proof.js';
import {
  SPAN_KIND_SERVER,
  startOtlpReceiver,
  type OtlpReceiver,
} from '../support/otlp-receiver.js';
import { startAttackStack, type AttackStack } from './attack-stack.js';
import { buildAttackTokens, createAttackerKey } from './tokens.js';

/** Shorter parts match by accident (`e30`, an empty signature, a short garbage value). */
const MIN_PART = 12;

let gate: AttackStack;
let receiver: OtlpReceiver;
let attackerServer: Server;
let attackerPort: number;
const attacker = createAttackerKey();
/** Every value that must never be exported or logged. */
const needles = new Set<string>();
let requests = 0;

function remember(value: string): void {
  if (value.length >= MIN_PART) needles.add(value);
  for (const part of value.split('.')) {
    if (part.length >= MIN_PART) needles.add(part);
    // A cut-down copy (a "prefix for debugging") is a leak too: each end of a long part.
    if (part.length >= 2 * MIN_PART) needles.add(part.slice(0, 16)).add(part.slice(-16));
  }
}

async function send(label: string, headers: Record<string, string>, earned = false) {
  for (const value of Object.values(headers)) remember(value.replace(/^(Bearer|DPoP)\s+/i, ''));
  requests++;
  return gate.send({ path: '/secret', headers, label, earned });
}

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  attackerPort = await freePort();
  attackerServer = createServer((_req, res) =>
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ keys: [attacker.jwk] })),
  );
  await new Promise<void>((resolve) => attackerServer.listen(attackerPort, '127.0.0.1', resolve));
  gate = await startAttackStack({
    env: {
      nginx: { SG_TRACE_CONTEXT: 'on', SG_TRACE_SAMPLE_PERCENT: '100' },
      verifier: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
        OTEL_TRACES_SAMPLER: 'always_on',
        OTEL_BSP_SCHEDULE_DELAY: '50',
        // Every line the verifier can write, the debug ones too.
        VERIFIER_LOG_LEVEL: 'debug',
      },
    },
  });
  for (const value of gate.canaries.values) needles.add(value);
  for (const key of ['ec', 'ecB', 'rsaA'] as const)
    for (const member of Object.values(privateProofJwk(key)))
      if (typeof member === 'string') remember(member);
  const d = (attacker.privateKey.export({ format: 'jwk' }) as { d: string }).d;
  needles.add(d);
}, 120_000);

afterAll(async () => {
  await gate?.stop();
  receiver?.close();
  await new Promise((resolve) => attackerServer?.close(resolve));
});

describe.sequential('tracing at 100 % leaks nothing', () => {
  it('drives the attack token table through NGINX', async () => {
    const valid = await gate.stack.mintToken();
    const jwks = (await (await fetch(`${gate.stack.urls.issuer}/jwks`)).json()) as { keys: [] };
    const cases = await buildAttackTokens(
      {
        issuer: gate.stack.urls.issuer,
        audience: 'secret-gate-api',
        jwks,
        valid,
        mint: (change) => gate.stack.mintToken({ ...change }),
        attackerJwksUrl: `http://127.0.0.1:${attackerPort}/jwks.json`,
        strictTyp: true,
      },
      attacker,
    );
    expect(cases.length).toBeGreaterThanOrEqual(40);
    for (const row of cases) {
      const answer = await send(
        `attack: ${row.name}`,
        { authorization: row.authorization },
        row.outcome === 'accepted',
      );
      expect(row.statuses).toContain(answer.status);
    }
  });

  it('drives valid, replayed and forged DPoP proofs through NGINX', async () => {
    const secretUrl = gate.stack.urls.secret;
    const tokenEndpoint = gate.stack.urls.tokenEndpoint;
    const tokenProof = await signProof({ htm: 'POST', htu: tokenEndpoint });
    remember(tokenProof);
    const response = await fetch(tokenEndpoint, {
      method: 'POST',
      headers: { DPoP: tokenProof },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: 'spa-demo',
        scope: 'secrets:read',
      }),
    });
    const { access_token: bound } = (await response.json()) as { access_token: string };
    const proof = (options = {}) => signProof({ htu: secretUrl, accessToken: bound, ...options });
    const used = await proof();
    const dpop = (label: string, value: string, earned = false) =>
      send(`dpop: ${label}`, { authorization: `DPoP ${bound}`, dpop: value }, earned);
    expect((await dpop('fresh', used, true)).status).toBe(200);
    expect((await dpop('replayed', used)).status).toBe(401);
    const forged = [
      await proof({ htu: secretUrl.replace('/secret', '/hello') }),
      await proof({ htm: 'POST' }),
      await proof({ key: 'ecB' }),
      await proof({ header: { jwk: privateProofJwk('ec') } }),
      unsignedProof({ htu: secretUrl, accessToken: bound }),
      await hmacProof({ htu: secretUrl, accessToken: bound }),
      `${await proof()}${'A'.repeat(3000)}`,
    ];
    for (const [i, value] of forged.entries())
      expect((await dpop(`forged ${i}`, value)).status).toBe(401);
  });

  it('hands out every secret set, each request traced with a client traceparent', async () => {
    for (const azp of ['spa-demo', 'partner-app', 'someone-else']) {
      const token = await gate.stack.mintToken({ claims: { azp } });
      const answer = await send(
        `set of ${azp}`,
        {
          authorization: `Bearer ${token}`,
          traceparent: `00-${'ab'.repeat(16)}-${'cd'.repeat(8)}-01`,
        },
        true,
      );
      expect(answer.status).toBe(200);
      const set = gate.canaries.sets[azp] ?? gate.canaries.sets.default!;
      for (const value of Object.values(set)) expect(answer.body).toContain(value);
    }
  });

  it('finds none of those values in any exported span or log line', async () => {
    // Every decision exported: one SERVER span per request that reached the verifier.
    for (let i = 0; i < 100; i++) {
      if (receiver.spans().filter((s) => s.kind === SPAN_KIND_SERVER).length >= requests - 5) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(receiver.spans().filter((s) => s.kind === SPAN_KIND_SERVER).length).toBeGreaterThan(
      requests / 2,
    );
    const logs = gate.readLogs();
    const sources = [
      { name: 'exported spans (decoded)', text: JSON.stringify(receiver.spans()) },
      { name: 'exports as sent', text: receiver.raw.join('\n') },
      ...logs,
    ];
    expect(logs.map((log) => log.name)).toEqual(
      expect.arrayContaining(['verifier', 'nginx/access.log', 'nginx/error.log']),
    );
    const found = sources.flatMap(({ name, text }) =>
      [...needles].filter((needle) => text.includes(needle)).map(() => name),
    );
    expect(needles.size).toBeGreaterThan(100);
    expect(found).toEqual([]);
    expect(gate.watch.scan(logs)).toEqual([]);
    expect(gate.serverErrors).toEqual([]);
  });
});

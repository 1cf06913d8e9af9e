// The verifier's child spans for its shared store and its grant: with OTEL_* on, a DPoP proof's
// replay check against a real redis-server is a Redis CLIENT span, and a policy's CloudFront
// cookies a `cloudfront.sign` span, both children of the decision's SERVER span, exported over
// OTLP/HTTP to a receiver in this process. Neither carries a key, a `jti` or a signature. A pushed
// logout token is a SERVER span of its own, its revocation writes to Redis its CLIENT children.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../verifier/src/config/load.js';
import { createVerifierService, type VerifierService } from '../../verifier/src/service.js';
import {
  captureLogger,
  startJwksServer,
  type JwksServer,
} from '../../verifier/src/testing/fixtures.js';
import { mintLogoutToken } from '../../verifier/src/testing/event-tokens.js';
import {
  boundRequest,
  dpopFile,
  logoutIssuer,
  until,
} from '../../verifier/src/testing/replicas.js';
import { startTracing, type Tracing } from '../../verifier/src/tracing/otel.js';
import {
  attributeOf,
  SPAN_KIND_CLIENT,
  SPAN_KIND_INTERNAL,
  SPAN_KIND_SERVER,
  startOtlpReceiver,
  type OtlpReceiver,
  type OtlpSpan,
} from '../support/otlp-receiver.js';
import { startRedisServer, type RedisServer } from '../support/redis-server.js';

const ORIGIN = 'https://gate.example.com';
const KEY_FILE = fileURLToPath(
  new URL('../fixtures/cloudfront/rsa-2048.pkcs8.pem', import.meta.url),
);
const TRACE = '7af92f3577b34da6a3ce929d0e0e4736';
const traceparent = (n: number) =>
  `00-${TRACE.slice(0, -2)}${String(n).padStart(2, '0')}-00f067aa0ba902b7-01`;

let receiver: OtlpReceiver;
let redis: RedisServer;
let jwks: JwksServer;
let tracing: Tracing;
let service: VerifierService;
const spans = () => receiver.spans();
const attribute = attributeOf;

/** The spans of `traceId` once its SERVER span has been exported. */
async function traceOf(traceId: string): Promise<OtlpSpan[]> {
  await receiver.serverSpan(traceId);
  return spans().filter((s) => s.traceId === traceId);
}

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  [redis, jwks] = await Promise.all([startRedisServer(), startJwksServer(['rsaA', 'ec'])]);
  vi.stubEnv('OTEL_EXPORTER_OTLP_ENDPOINT', receiver.endpoint);
  vi.stubEnv('OTEL_BSP_SCHEDULE_DELAY', '20');
  tracing = await startTracing({ protocol: 'http/json', serviceName: 'test' });
  vi.unstubAllEnvs();
  const cloudfront = {
    keyPairId: 'K2JCJMDEHXQW5F',
    privateKeyFile: KEY_FILE,
    algorithm: 'RSA-SHA256',
    resource: 'https://cdn.example.com/private/*',
    ttlSeconds: 600,
  };
  // The issuer also takes back-channel logout tokens: the receiver's writes go to the same Redis.
  const file = { ...dpopFile(jwks.url, 'required'), issuers: [logoutIssuer(jwks.url)] };
  file.policies.secret = { ...file.policies.secret, cloudfront } as typeof file.policies.secret;
  const config = loadConfig(
    { VERIFIER_REDIS_URL: redis.url, VERIFIER_CONFIG: '/test/config.json' },
    (path) => (path === KEY_FILE ? readFileSync(KEY_FILE, 'utf8') : JSON.stringify(file)),
  );
  service = createVerifierService(config, {
    logger: captureLogger().logger,
    defaultMetrics: false,
    tracing,
  });
  await service.start();
  await until(() => service.isReady(), 10_000);
}, 60_000);
afterAll(async () => {
  await service?.stop();
  await tracing?.shutdown().catch(() => undefined);
  await Promise.all([redis?.stop(), jwks?.close()]);
  receiver?.close();
});

describe('child spans of a decision', () => {
  it("records the replay store's Redis command and the CloudFront signing under the SERVER span", async () => {
    const request = await boundRequest(ORIGIN);
    const decision = await service.authorize({ ...request, traceparent: traceparent(1) });
    expect(decision.outcome).toBe('allow');
    const traced = await traceOf(`${TRACE.slice(0, -2)}01`);
    const server = traced.find((s) => s.kind === SPAN_KIND_SERVER)!;

    const redisSpans = traced.filter((s) => attribute(s, 'db.system.name') === 'redis');
    expect(redisSpans.map((s) => s.name)).toContain('SET');
    for (const span of redisSpans) {
      expect(span.kind).toBe(SPAN_KIND_CLIENT);
      expect(span.parentSpanId).toBe(server.spanId);
      expect(attribute(span, 'server.port')).toBe(String(redis.port));
    }
    const signing = traced.find((s) => s.name === 'cloudfront.sign');
    expect(signing?.kind).toBe(SPAN_KIND_INTERNAL);
    expect(signing?.parentSpanId).toBe(server.spanId);
    expect(attribute(signing!, 'secret_gate.cloudfront.key_pair_id')).toBe('K2JCJMDEHXQW5F');

    // Never a key (it names the proof's `jti`), a signature or the proof in a span.
    const exported = JSON.stringify(traced);
    expect(exported).not.toContain('sg:dpop');
    expect(exported).not.toContain(request.dpop.split('.')[2]);
    // The policy and its signature (the key pair id is public: it names the key, as above).
    const signed = (decision.headers ?? []).filter(([name]) => /Policy|Signature/.test(name));
    expect(signed).toHaveLength(2);
    for (const [, cookie] of signed)
      expect(exported).not.toContain(cookie.split(';')[0]!.split('=')[1]);
  });

  it('records no Redis span for a command made outside a decision (a background reload)', async () => {
    const client = new Redis(redis.url);
    expect(await client.ping()).toBe('PONG');
    client.disconnect();
    // One traced decision after it: its spans are exported, the PING's would have been before.
    await service.authorize({ ...(await boundRequest(ORIGIN)), traceparent: traceparent(2) });
    await traceOf(`${TRACE.slice(0, -2)}02`);
    expect(spans().filter((s) => s.name === 'PING')).toEqual([]);
  });

  it("records a pushed logout's Redis writes under the receiver's SERVER span, NGINX's span its parent", async () => {
    const token = await mintLogoutToken({ claims: { sub: 'dave-the-subject' } });
    const answer = await service.routes.receivers.get('/backchannel-logout')!({
      contentType: 'application/x-www-form-urlencoded',
      body: `logout_token=${encodeURIComponent(token)}`,
      traceparent: traceparent(3),
    });
    expect(answer.status).toBe(200);
    const traced = await traceOf(`${TRACE.slice(0, -2)}03`);
    const server = traced.find((s) => s.kind === SPAN_KIND_SERVER)!;
    expect(server.name).toBe('POST /backchannel-logout');
    expect(server.parentSpanId).toBe('00f067aa0ba902b7');
    expect(attribute(server, 'http.response.status_code')).toBe('200');

    const writes = traced.filter((s) => attribute(s, 'db.system.name') === 'redis');
    expect(writes.length).toBeGreaterThan(0);
    for (const span of writes) {
      expect(span.kind).toBe(SPAN_KIND_CLIENT);
      expect(span.parentSpanId).toBe(server.spanId);
      expect(attribute(span, 'server.port')).toBe(String(redis.port));
    }
    // Never the token, the subject or a watermark key (`sg:rev:…` names the subject).
    const exported = JSON.stringify(traced);
    expect(exported).not.toContain(token.split('.')[2]);
    expect(exported).not.toContain('dave-the-subject');
    expect(exported).not.toContain('sg:rev');
  });

  it('records no receiver span for a logout NGINX marked unsampled, and still applies it', async () => {
    const unsampled = `00-${TRACE.slice(0, -2)}04-00f067aa0ba902b7-00`;
    const token = await mintLogoutToken({ claims: { sub: 'erin' } });
    const answer = await service.routes.receivers.get('/backchannel-logout')!({
      contentType: 'application/x-www-form-urlencoded',
      body: `logout_token=${encodeURIComponent(token)}`,
      traceparent: unsampled,
    });
    expect(answer.status).toBe(200);
    // A sampled decision after it: its spans are exported, the logout's would have been before.
    await service.authorize({ ...(await boundRequest(ORIGIN)), traceparent: traceparent(5) });
    await traceOf(`${TRACE.slice(0, -2)}05`);
    expect(spans().filter((s) => s.traceId === `${TRACE.slice(0, -2)}04`)).toEqual([]);
  });
});

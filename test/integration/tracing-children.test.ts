// The verifier's child spans for its shared store and its grants: with OTEL_* on, a DPoP proof's
// replay check against a real redis-server is a Redis CLIENT span, a policy's CloudFront cookies a
// `cloudfront.sign` span and each value it mints a `mint <kind>` span, all children of the
// decision's SERVER span, exported over OTLP/HTTP to a receiver in this process. None carries a
// key, a `jti`, a signature or a minted value. A token exchange's call to node-oidc-provider is a
// child of its mint span. A pushed logout token is a SERVER span of its own, its revocation writes
// to Redis its CLIENT children.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../verifier/src/config/load.js';
import { createVerifierService, type VerifierService } from '../../verifier/src/service.js';
import {
  captureLogger,
  ISSUER,
  mintToken,
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
import { ownIdpVerifierConfig } from '../../stack/service-env.js';
import {
  attributeOf,
  SPAN_KIND_CLIENT,
  SPAN_KIND_INTERNAL,
  SPAN_KIND_SERVER,
  startOtlpReceiver,
  type OtlpReceiver,
  type OtlpSpan,
} from '../support/otlp-receiver.js';
import { REFUSED_AUDIENCE } from '../support/oidc-provider-exchange.js';
import { startOidcProvider, type OidcProviderHarness } from '../support/oidc-provider.js';
import { startRedisServer, type RedisServer } from '../support/redis-server.js';

const ORIGIN = 'https://gate.example.com';
const KEY_FILE = fileURLToPath(
  new URL('../fixtures/cloudfront/rsa-2048.pkcs8.pem', import.meta.url),
);
const TRACE = '7af92f3577b34da6a3ce929d0e0e4736';
const traceparent = (n: number) =>
  `00-${TRACE.slice(0, -2)}${String(n).padStart(2, '0')}-00f067aa0ba902b7-01`;
const traceId = (n: number) => `${TRACE.slice(0, -2)}${String(n).padStart(2, '0')}`;
/** The parent keys of the minted values: neither may appear in a span. */
const CHAT_KEY = 'chat-signing-secret-'.repeat(2);
const STREAM_KEY = 'stream-api-secret-'.repeat(2);
const EXCHANGE_CLIENT = 'gate-exchange';

let scratch: string;
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

/** A parent key in a file only its owner may read, as the minters require. */
function keyFile(name: string, key: string): string {
  const path = join(scratch, name);
  writeFileSync(path, key, { mode: 0o600 });
  return path;
}

/** The minted JSON after the set's name, as NGINX reads it from the answer. */
function mintedOf(decision: { headers?: readonly (readonly [string, string])[] }) {
  const minted = decision.headers?.find(([name]) => name === 'X-Auth-Minted')?.[1];
  return JSON.parse(minted ?? '{}') as Record<string, string>;
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'sg-tracing-children-'));
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
  // Two values of two kinds, both templated over the caller's subject.
  const mint = {
    'chat-token': {
      kind: 'jwt',
      alg: 'HS256',
      keyFile: keyFile('chat.key', CHAT_KEY),
      ttlSeconds: 120,
      claims: { user_id: '{sub}' },
    },
    'stream-token': {
      kind: 'stream-chat-token',
      secretFile: keyFile('stream.key', STREAM_KEY),
      ttlSeconds: 120,
    },
  };
  Object.assign(file.policies, { minted: { issuers: [ISSUER], scopes: ['secrets:read'], mint } });
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
  if (scratch) rmSync(scratch, { recursive: true, force: true });
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

describe('mint spans of a decision', () => {
  const subject = 'mint-span-subject-7f3a';
  const ask = async (n: number, token: string) =>
    service.authorize({
      policy: 'minted',
      authorization: `Bearer ${token}`,
      traceparent: traceparent(n),
    });

  it('records one INTERNAL span per value minted under the SERVER span, naming never a value', async () => {
    const token = await mintToken({ claims: { sub: subject } });
    const decision = await ask(6, token);
    expect(decision.outcome).toBe('allow');
    const traced = await traceOf(traceId(6));
    const server = traced.find((s) => s.kind === SPAN_KIND_SERVER)!;

    const mints = traced.filter((s) => s.name.startsWith('mint '));
    expect(mints.map((s) => s.name).sort()).toEqual(['mint jwt', 'mint stream-chat-token']);
    for (const span of mints) {
      expect(span.kind).toBe(SPAN_KIND_INTERNAL);
      expect(span.parentSpanId).toBe(server.spanId);
      expect(attribute(span, 'secret_gate.policy')).toBe('minted');
      expect(span.status?.code ?? 0).not.toBe(2);
    }
    const byName = Object.fromEntries(mints.map((s) => [attribute(s, 'secret_gate.mint.name'), s]));
    expect(attribute(byName['chat-token'], 'secret_gate.mint.kind')).toBe('jwt');
    expect(attribute(byName['stream-token'], 'secret_gate.mint.kind')).toBe('stream-chat-token');

    // Neither value (nor a part of it), the keys, the subject the claims name, or the token.
    const values = mintedOf(decision);
    expect(Object.keys(values).sort()).toEqual(['chat-token', 'expires_at', 'stream-token']);
    const exported = JSON.stringify(traced);
    for (const value of [values['chat-token']!, values['stream-token']!])
      for (const part of value.split('.')) expect(exported).not.toContain(part);
    for (const secret of [CHAT_KEY, STREAM_KEY, subject, token.split('.')[2]!])
      expect(exported).not.toContain(secret);
  });

  it('records no mint span when the set is served from the minted cache', async () => {
    const token = await mintToken({ claims: { sub: `${subject}-cached` } });
    const first = await ask(7, token);
    const again = await ask(8, token);
    expect(mintedOf(again)).toEqual(mintedOf(first));
    expect((await traceOf(traceId(7))).filter((s) => s.name.startsWith('mint '))).toHaveLength(2);
    const cached = await traceOf(traceId(8));
    expect(cached.filter((s) => s.name.startsWith('mint '))).toEqual([]);
  });
});

describe('mint spans of a token exchange (node-oidc-provider)', () => {
  let provider: OidcProviderHarness;
  let exchanging: VerifierService;

  beforeAll(async () => {
    provider = await startOidcProvider({ tokenExchangeClient: EXCHANGE_CLIENT });
    const entry = (audience: string) => ({
      kind: 'token-exchange',
      clientId: EXCHANGE_CLIENT,
      clientAuth: {
        method: 'client_secret_basic',
        secretFile: keyFile('exchange.secret', `${EXCHANGE_CLIENT}-secret`),
      },
      audience,
      ttlSeconds: 120,
    });
    const file = ownIdpVerifierConfig({
      issuer: provider.issuer,
      audience: provider.resource,
      preset: 'rfc9068',
    }) as { policies: Record<string, object> };
    const secret = file.policies.secret!;
    file.policies.secret = { ...secret, mint: { 'partner-token': entry('partner-api') } };
    file.policies.refused = { ...secret, mint: { 'partner-token': entry(REFUSED_AUDIENCE) } };
    const config = loadConfig({ VERIFIER_CONFIG: '/test/exchange.json' }, () =>
      JSON.stringify(file),
    );
    exchanging = createVerifierService(config, {
      logger: captureLogger().logger,
      defaultMetrics: false,
      tracing,
    });
    await exchanging.start();
  }, 60_000);
  afterAll(async () => {
    await exchanging?.stop();
    await provider?.close();
  });

  const exchange = async (n: number, policy: string, token: string) =>
    exchanging.authorize({ policy, authorization: `Bearer ${token}`, traceparent: traceparent(n) });

  it("records the provider's token call as a child of the mint span", async () => {
    const token = await provider.token('spa-demo');
    const decision = await exchange(9, 'secret', token);
    expect(decision.outcome).toBe('allow');
    const traced = await traceOf(traceId(9));
    const server = traced.find((s) => s.kind === SPAN_KIND_SERVER)!;
    const mint = traced.find((s) => s.name === 'mint token-exchange')!;
    expect(mint.kind).toBe(SPAN_KIND_INTERNAL);
    expect(mint.parentSpanId).toBe(server.spanId);
    expect(attribute(mint, 'secret_gate.mint.name')).toBe('partner-token');

    const call = traced.find((s) => s.kind === SPAN_KIND_CLIENT && s.name === 'POST')!;
    expect(attribute(call, 'url.full')).toBe(provider.tokenEndpoint);
    expect(call.parentSpanId).toBe(mint.spanId);
    expect(attribute(call, 'http.response.status_code')).toBe('200');

    // Neither the exchanged token, the caller's token nor the client's secret.
    const exported = JSON.stringify(traced);
    const exchanged = mintedOf(decision)['partner-token']!;
    for (const secret of [exchanged, token.split('.')[2]!, `${EXCHANGE_CLIENT}-secret`])
      expect(exported).not.toContain(secret);
  });

  it('marks the mint span failed, with the error class only, when the provider refuses', async () => {
    const decision = await exchange(10, 'refused', await provider.token('spa-demo'));
    expect(decision.reason).toBe('mint_exchange_refused');
    const traced = await traceOf(traceId(10));
    const mint = traced.find((s) => s.name === 'mint token-exchange')!;
    expect(mint.status).toEqual({ code: 2, message: 'MintError' });
    const call = traced.find((s) => s.kind === SPAN_KIND_CLIENT && s.name === 'POST')!;
    expect(call.parentSpanId).toBe(mint.spanId);
    expect(attribute(call, 'http.response.status_code')).toBe('400');
  });
});

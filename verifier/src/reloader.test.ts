// Policies change without a restart: a changed configuration file is validated whole and applied
// in one swap; a broken one, or one changing a setting only a restart applies, is refused with its
// problems logged and the running policies kept; the metrics say which version is live.
import { mkdtempSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from './config/load.js';
import { configDigest, createConfigReloader, readConfigSource } from './reloader.js';
import { createVerifierService, type VerifierService } from './service.js';
import { verdictOf } from './testing/answer.js';
import {
  AUDIENCE,
  ISSUER,
  captureLogger,
  manualClock,
  mintToken,
  startJwksServer,
  type JwksServer,
} from './testing/fixtures.js';

const clock = manualClock();
const T = clock.seconds();
let jwks: JwksServer;
let dir: string;
let file: string;
let service: VerifierService;
let reloader: ReturnType<typeof createConfigReloader>;
let lines: string[];

/** A whole configuration document: one issuer, `secret` serving `clients`. */
function document(clients: string[], extra: Record<string, unknown> = {}) {
  return {
    issuers: [{ issuer: ISSUER, jwksUri: jwks.url, audience: AUDIENCE, clockTolerance: '0s' }],
    policies: { secret: { issuers: [ISSUER], scopes: ['secrets:read'], clients } },
    ...extra,
  };
}

/** Replaces the file as an operator's tool does: written beside it, then renamed over it. */
function replaceFile(content: unknown) {
  const next = `${file}.next`;
  writeFileSync(next, typeof content === 'string' ? content : JSON.stringify(content));
  renameSync(next, file);
}

const spa = () => mintToken({ now: T, claims: { azp: 'spa-demo' } });
const partner = () => mintToken({ now: T, claims: { azp: 'partner-app' } });
const ask = async (token: string) =>
  verdictOf(await service.authorize({ authorization: `Bearer ${token}`, policy: 'secret' }));
const metricsText = () => service.metrics.render();
const ALLOWED = { status: 204, reason: 'allowed' };
const CLIENT_REFUSED = { status: 403, reason: 'client_not_allowed' };

beforeAll(async () => {
  jwks = await startJwksServer(['rsaA']);
});
afterAll(() => jwks.close());

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sg-reload-'));
  file = join(dir, 'verifier.json');
  replaceFile(document(['spa-demo', 'partner-app']));
  const env = { VERIFIER_CONFIG: file };
  const { source, read } = readConfigSource(env);
  const captured = captureLogger('info');
  lines = captured.lines;
  service = createVerifierService(loadConfig(env, read), {
    logger: captured.logger,
    now: clock.now,
    defaultMetrics: false,
    configDigest: source!.digest,
  });
  await service.start();
  reloader = createConfigReloader({
    source: source!,
    env,
    service,
    logger: captured.logger,
    pace: { poll: 1, settle: 0.005 },
  });
});
afterEach(async () => {
  await reloader.stop();
  await service.stop(0);
  rmSync(dir, { recursive: true, force: true });
});

describe('a changed configuration file', () => {
  it('applies a stricter policy at once: the removed client gets 403, the metric names the new file', async () => {
    const partnerToken = await partner();
    expect(await ask(partnerToken)).toEqual(ALLOWED);
    const stricter = document(['spa-demo']);
    replaceFile(stricter);
    await reloader.check();

    // The partner's token is cached as verified; its allow under the old policy is not reused.
    expect(await ask(partnerToken)).toEqual(CLIENT_REFUSED);
    expect(await ask(await spa())).toEqual(ALLOWED);
    const digest = configDigest(JSON.stringify(stricter));
    expect(service.version).toEqual({ generation: 2, digest });
    const metrics = await metricsText();
    expect(metrics).toContain(`verifier_config_info{generation="2",digest="${digest}"} 1`);
    expect(metrics).not.toContain('generation="1"');
    expect(metrics).toContain('verifier_config_reloads_total{outcome="applied"} 1');
    expect(lines.join('\n')).toContain('configuration reloaded');
  });

  it('applies a looser one the same way: a client added is allowed', async () => {
    replaceFile(document(['spa-demo']));
    await reloader.check();
    const partnerToken = await partner();
    expect(await ask(partnerToken)).toEqual(CLIENT_REFUSED);
    replaceFile(document(['spa-demo', 'partner-app']));
    await reloader.check();
    expect(await ask(partnerToken)).toEqual(ALLOWED);
    expect(service.version.generation).toBe(3);
  });

  it('drops what the cache holds for an issuer whose settings changed', async () => {
    const token = await spa();
    expect(await ask(token)).toEqual(ALLOWED);
    const moved = document(['spa-demo', 'partner-app']);
    moved.issuers[0]!.audience = 'another-api';
    replaceFile(moved);
    await reloader.check();
    // Verified afresh under the new audience, not served from the cache.
    expect(await ask(token)).toEqual({ status: 401, reason: 'audience_mismatch' });
  });

  it('never reuses what a verification still in flight at the swap proved under the old issuer settings', async () => {
    const token = await spa();
    // A cache miss: its signature check is still running when the new settings go live.
    const inFlight = service.authorize({ authorization: `Bearer ${token}`, policy: 'secret' });
    const moved = document(['spa-demo', 'partner-app']);
    moved.issuers[0]!.audience = 'another-api';
    const env = { VERIFIER_CONFIG: file };
    replaceFile(moved);
    await service.reload(loadConfig(env), configDigest(JSON.stringify(moved)));
    expect(verdictOf(await inFlight)).toEqual(ALLOWED);
    expect(await ask(token)).toEqual({ status: 401, reason: 'audience_mismatch' });
  });

  it('adds a named policy, then removes it', async () => {
    const token = await spa();
    const ask2 = async () =>
      verdictOf(await service.authorize({ authorization: `Bearer ${token}`, policy: 'payments' }));
    expect((await ask2()).reason).toBe('policy_unknown');
    const withPayments = document(['spa-demo']);
    replaceFile({
      ...withPayments,
      policies: {
        ...withPayments.policies,
        payments: { issuers: [ISSUER], clients: ['spa-demo'] },
      },
    });
    await reloader.check();
    expect(await ask2()).toEqual(ALLOWED);
    replaceFile(document(['spa-demo']));
    await reloader.check();
    expect((await ask2()).reason).toBe('policy_unknown');
  });
});

describe('a refused configuration file', () => {
  it.each([
    ['not JSON', '{ "policies": ', /VERIFIER_CONFIG: not valid JSON/],
    [
      'an unknown field',
      { issuers: [], policies: { secret: { issuers: [ISSUER], scoeps: [] } } },
      /scoeps/,
    ],
    [
      'a policy naming an issuer the file lacks',
      { issuers: [], policies: { secret: { issuers: [ISSUER] } } },
      /issuer/,
    ],
  ])('keeps the running policies when the file holds %s, and says why', async (_, content, why) => {
    const partnerToken = await partner();
    replaceFile(content);
    await reloader.check();
    expect(await ask(partnerToken)).toEqual(ALLOWED);
    expect(service.version.generation).toBe(1);
    expect(await metricsText()).toContain('verifier_config_reloads_total{outcome="refused"} 1');
    const refused = lines.find((line) => line.includes('configuration change refused'));
    expect(refused).toMatch(why);
    // Refused once: polling the same broken content again neither logs nor counts it again.
    await reloader.check();
    expect(await metricsText()).toContain('verifier_config_reloads_total{outcome="refused"} 1');
  });

  it('never logs a credential the broken file holds', async () => {
    const broken = document(['spa-demo']);
    broken.issuers[0]!.jwksUri = 'ftp://admin:hunter2-password@idp.test/jwks';
    replaceFile(broken);
    await reloader.check();
    expect(service.version.generation).toBe(1);
    expect(lines.join('\n')).not.toContain('hunter2-password');
  });

  it('reads the file by itself at the pace it was given, once started', async () => {
    await reloader.stop();
    reloader = createConfigReloader({
      source: readConfigSource({ VERIFIER_CONFIG: file }).source!,
      env: { VERIFIER_CONFIG: file },
      service,
      logger: captureLogger('info').logger,
      pace: { poll: 0.05, settle: 0.01 },
    });
    reloader.start();
    replaceFile(document(['spa-demo']));
    await expect.poll(() => service.version.generation, { timeout: 5_000 }).toBe(2);
  });

  it('refuses a file that changes a setting only a restart applies, policies included', async () => {
    const partnerToken = await partner();
    replaceFile(document(['spa-demo'], { logLevel: 'debug', cache: { edgeTtl: '1s' } }));
    await reloader.check();
    expect(await ask(partnerToken)).toEqual(ALLOWED);
    const refused = lines.find((line) => line.includes('configuration change refused')) ?? '';
    expect(refused).toContain('logLevel: changed; read at start only; restart to apply');
    expect(refused).toContain('cache: changed; read at start only; restart to apply');
  });

  it('refuses DPoP on a policy when no policy read DPoP at start', async () => {
    const dpop = document(['spa-demo']);
    replaceFile({ ...dpop, policies: { secret: { ...dpop.policies.secret, dpop: 'required' } } });
    await reloader.check();
    expect(service.version.generation).toBe(1);
    expect(lines.join('\n')).toContain('policies.secret.dpop: no policy read DPoP at start');
  });

  it('counts a file that is gone as one refusal, and applies nothing when it comes back unchanged', async () => {
    const original = JSON.stringify(document(['spa-demo', 'partner-app']));
    unlinkSync(file);
    await reloader.check();
    expect(lines.join('\n')).toContain('cannot read');
    replaceFile(original);
    await reloader.check();
    expect(service.version.generation).toBe(1);
    expect(await metricsText()).not.toContain('outcome="applied"');
  });
});

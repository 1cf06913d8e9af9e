import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createFakeRequest } from './fake-request.js';
import secrets from './secrets.js';

const file = {
  default: { 'x-api-key': 'default-key' },
  clients: { 'spa-demo': { 'x-api-key': 'spa-key' } },
};
const ISS = 'https://idp.example';
/** The verifier's issuer for the call and the issuer owning the file's flat `clients` map. */
const ISSUED = { sg_auth_issuer: ISS, sg_secrets_issuer: ISS };
const cloudFrontVariables = {
  sg_cf_policy: 'cG9saWN5',
  sg_cf_signature: 'c2ln~x_',
  sg_cf_key_pair_id: 'K2JCJMDEHXQW5F',
  sg_cf_domain: 'example.test',
};

describe('sendSecrets (the /secret content handler)', () => {
  it("answers 200 JSON with the set of the verifier's X-Auth-Client", () => {
    const r = createFakeRequest({ ...ISSUED, sg_auth_client: 'spa-demo' });
    secrets.sendSecrets(r, file, undefined);
    expect(r.status).toBe(200);
    expect(r.headersOut['Content-Type']).toBe('application/json');
    expect(JSON.parse(r.body ?? '')).toEqual({ 'x-api-key': 'spa-key' });
  });

  it("answers the default set to another issuer's client with the same id", () => {
    const r = createFakeRequest({
      ...ISSUED,
      sg_auth_issuer: 'https://other.example',
      sg_auth_client: 'spa-demo',
    });
    secrets.sendSecrets(r, file, undefined);
    expect(JSON.parse(r.body ?? '')).toEqual({ 'x-api-key': 'default-key' });
  });

  it('answers the default set for a client the file does not list', () => {
    const r = createFakeRequest({ ...ISSUED, sg_auth_client: 'unlisted' });
    secrets.sendSecrets(r, file, undefined);
    expect(JSON.parse(r.body ?? '')).toEqual({ 'x-api-key': 'default-key' });
  });

  it('answers the flat SECRETS object when that variable is set', () => {
    const r = createFakeRequest({ ...ISSUED, sg_auth_client: 'spa-demo' });
    secrets.sendSecrets(r, file, '{"mysupersecretkey":"1"}');
    expect(JSON.parse(r.body ?? '')).toEqual({ mysupersecretkey: '1' });
  });

  it('adds the CloudFront cookies when the verifier granted them', () => {
    const r = createFakeRequest({ ...ISSUED, sg_auth_client: 'spa-demo', ...cloudFrontVariables });
    secrets.sendSecrets(r, file, undefined);
    const cookies = r.headersOut['Set-Cookie'] as string[];
    expect(cookies.map((c) => c.split('=')[0])).toEqual([
      'CloudFront-Policy',
      'CloudFront-Signature',
      'CloudFront-Key-Pair-Id',
    ]);
    expect(cookies[0]).toContain('; Domain=example.test');
  });

  it('sets no cookie without a grant', () => {
    const r = createFakeRequest({ ...ISSUED, sg_auth_client: 'spa-demo' });
    secrets.sendSecrets(r, file, undefined);
    expect(r.headersOut['Set-Cookie']).toBeUndefined();
  });

  it('fails closed with 503 and no set when the secrets source is broken, logging why but no value', () => {
    const r = createFakeRequest({ ...ISSUED, sg_auth_client: 'spa-demo' });
    secrets.sendSecrets(r, file, '{"key":"do-not-log-me"');
    expect(r.status).toBe(503);
    expect(JSON.parse(r.body ?? '')).toEqual({ error: 'secrets_unavailable' });
    expect(r.headersOut['Retry-After']).toBe('30');
    expect(r.headersOut['Set-Cookie']).toBeUndefined();
    expect(r.errors).toEqual(['secret-gate: secrets unavailable: SECRETS is not valid JSON']);
    expect(r.body).not.toContain('do-not-log-me');
  });
});

describe('respond (js_content secrets.respond)', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
    vi.unstubAllGlobals();
  });

  it('with SG_SECRETS_READ=at-start, reads the object js_preload_object defined as the global sg_secrets', () => {
    vi.stubGlobal('sg_secrets', file);
    vi.stubEnv('SECRETS', '');
    const r = createFakeRequest({
      ...ISSUED,
      sg_auth_client: 'spa-demo',
      sg_secrets_read: 'at-start',
    });
    secrets.respond(r);
    expect(JSON.parse(r.body ?? '')).toEqual({ 'x-api-key': 'spa-key' });
  });

  it('by default reads the secrets file as it is on disk now, not the preloaded copy', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sg-secrets-'));
    const path = join(dir, 'secrets.json');
    writeFileSync(path, JSON.stringify({ default: { 'x-api-key': 'rotated-key' } }));
    vi.stubGlobal('sg_secrets', file);
    vi.stubEnv('SECRETS', '');
    const r = createFakeRequest({ ...ISSUED, sg_auth_client: 'spa-demo', sg_secrets_file: path });
    secrets.respond(r);
    rmSync(dir, { recursive: true });
    expect(JSON.parse(r.body ?? '')).toEqual({ 'x-api-key': 'rotated-key' });
  });

  it('answers 503 and no set when the secrets file cannot be read', () => {
    vi.stubEnv('SECRETS', '');
    const r = createFakeRequest({ sg_secrets_file: '/nonexistent/secrets.json' });
    secrets.respond(r);
    expect(r.status).toBe(503);
    expect(JSON.parse(r.body ?? '')).toEqual({ error: 'secrets_unavailable' });
  });

  it('prefers the SECRETS environment variable', () => {
    vi.stubGlobal('sg_secrets', file);
    vi.stubEnv('SECRETS', '{"mysupersecretkey":"123123123"}');
    const r = createFakeRequest({ ...ISSUED, sg_auth_client: 'spa-demo' });
    secrets.respond(r);
    expect(JSON.parse(r.body ?? '')).toEqual({ mysupersecretkey: '123123123' });
  });
});

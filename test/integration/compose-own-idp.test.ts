// docker-compose.own-idp.yaml, laid over docker-compose.yaml, is the Docker spelling of
// `npm start -- --issuer`: the dev IdP left out, the verifier configured by the single-issuer
// variables (whose policy is the `secret` NGINX asks for), NGINX pointed at the same issuer.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, type ScalarTag } from 'yaml';
import { describe, expect, it } from 'vitest';
import { dockerNginxEnv } from '../../stack/nginx/render.js';
import { REPO_ROOT } from '../../stack/start-stack.js';
import { ENVIRONMENT } from '../../verifier/src/config/load.js';

interface Service {
  profiles?: string[];
  depends_on?: unknown;
  environment?: Record<string, string>;
  volumes?: string[];
}

// Compose's `!reset` tag: the value it replaces the base file's with.
const reset = {
  tag: '!reset',
  collection: 'map',
  resolve: () => ({ reset: true }),
} as unknown as ScalarTag;
const overlay = parse(readFileSync(join(REPO_ROOT, 'docker-compose.own-idp.yaml'), 'utf8'), {
  customTags: [reset],
}) as { services: Record<string, Service> };
const service = (name: string): Service => overlay.services[name] ?? {};

describe('docker-compose.own-idp.yaml', () => {
  it('leaves the dev IdP out: it only runs in a profile nothing starts, and nobody waits for it', () => {
    expect(service('idp')).toEqual({ profiles: ['dev-idp'] });
    expect(service('verifier').depends_on).toEqual({ reset: true });
  });

  it('configures the verifier with known single-issuer variables, the file turned off', () => {
    const env = service('verifier').environment ?? {};
    const known = new Set(ENVIRONMENT.map((row) => row.env));
    expect(Object.keys(env).filter((name) => !known.has(name))).toEqual([]);
    expect(env.VERIFIER_CONFIG).toBe('');
    expect(env).toMatchObject({
      VERIFIER_ISSUER: expect.stringContaining('SECRET_GATE_ISSUER'),
      VERIFIER_PRESET: expect.stringContaining('SECRET_GATE_PRESET'),
      // An operator's own variable wins over the overlay's default, as over the runner's.
      VERIFIER_REQUIRED_SCOPES: '${VERIFIER_REQUIRED_SCOPES:-${SECRET_GATE_SCOPES:-secrets:read}}',
      VERIFIER_LOGOUT_AUDIENCES: '${VERIFIER_LOGOUT_AUDIENCES:-${SECRET_GATE_LOGOUT_AUDIENCES:-}}',
    });
  });

  it('points NGINX at the same issuer and mounts the operator secrets where the image reads them', () => {
    const env = service('nginx').environment ?? {};
    const sg = dockerNginxEnv();
    for (const name of Object.keys(env)) expect(sg).toHaveProperty(name);
    expect(env.SG_OIDC_ISSUER).toContain('SECRET_GATE_ISSUER');
    expect(env.SG_SECRETS_ISSUER).toContain('SECRET_GATE_ISSUER');
    expect(service('nginx').volumes?.[0]).toMatch(
      new RegExp(`^\\$\\{SECRET_GATE_SECRETS_FILE:\\?[^}]+\\}:${sg.SG_SECRETS_FILE}:ro$`),
    );
  });
});

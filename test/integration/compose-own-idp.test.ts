// docker-compose.own-idp.yaml, laid over docker-compose.yaml, is the Docker spelling of
// `npm start -- --issuer`: the dev IdP left out, the verifier configured by the single-issuer
// variables (whose policy is the `secret` NGINX asks for), NGINX pointed at the same issuer.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, type ScalarTag } from 'yaml';
import { describe, expect, it } from 'vitest';
import { dockerNginxEnv } from '../../stack/nginx/render.js';
import { composeService } from '../support/compose-render.js';
import { REPO_ROOT } from '../../stack/start-stack.js';
import { ENVIRONMENT, loadConfig } from '../../verifier/src/config/load.js';

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
// The three files of the own-IdP run with a policy file, in their order on the command line.
const FILES = [
  'docker-compose.yaml',
  'docker-compose.own-idp.yaml',
  'docker-compose.policy-file.yaml',
];
const merged = (name: string, vars: Record<string, string>) => composeService(FILES, name, vars);

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

  describe('with docker-compose.policy-file.yaml laid over it', () => {
    const vars = {
      SECRET_GATE_ISSUER: 'https://login.example.com/realms/acme',
      SECRET_GATE_IDP_ORIGIN: 'https://login.example.com',
      SECRET_GATE_CLIENT_ID: 'my-spa',
      SECRET_GATE_SECRETS_FILE: './secrets.json',
      SECRET_GATE_POLICY_FILE: './policies.json',
    };
    const policies = {
      issuers: [
        {
          type: 'jwt',
          issuer: vars.SECRET_GATE_ISSUER,
          audience: 'secret-gate-api',
          preset: 'keycloak',
        },
      ],
      policies: {
        secret: { issuers: [vars.SECRET_GATE_ISSUER], scopes: ['secrets:read'] },
        payments: {
          issuers: [vars.SECRET_GATE_ISSUER],
          scopes: ['secrets:read'],
          acrValues: ['urn:acme:mfa'],
          maxAge: '5m',
        },
      },
    };

    it('starts the verifier from the policy file alone: its policies, none of the overlay variables', () => {
      const verifier = merged('verifier', vars);
      const target = verifier.env.VERIFIER_CONFIG ?? '';
      expect(verifier.volumes).toContain(`./policies.json:${target}:ro`);
      const read: string[] = [];
      const config = loadConfig(verifier.env, (path) => {
        read.push(path);
        // The file, or the edge key the verifier made on its first start.
        return path === target ? JSON.stringify(policies) : 'k'.repeat(64);
      });
      expect(read).toContain(target);
      expect([...config.policies.keys()].sort()).toEqual(['payments', 'secret']);
      expect(config.policies.get('payments')?.acrValues).toEqual(['urn:acme:mfa']);
    });

    it("has NGINX take its named sets from the verifier's file, mounted where SG_POLICY_FILE points", () => {
      const nginx = merged('nginx', vars);
      const target = merged('verifier', vars).env.VERIFIER_CONFIG ?? '';
      expect(nginx.env.SG_POLICY_FILE).toBe(target);
      expect(nginx.volumes).toContain(`./policies.json:${target}:ro`);
      expect(nginx.env).not.toHaveProperty('SG_SPA_SECRET_SETS');
      expect(nginx.volumes).toContain(`./secrets.json:${dockerNginxEnv().SG_SECRETS_FILE}:ro`);
      // Without this file the verifier has the `secret` policy only, and NGINX reads no policy
      // file: no named set (every /secret/<name> is a 404 at the edge).
      const ownIdpOnly = composeService(FILES.slice(0, 2), 'nginx', vars);
      expect(ownIdpOnly.env).not.toHaveProperty('SG_POLICY_FILE');
      expect(ownIdpOnly.env).not.toHaveProperty('SG_SPA_SECRET_SETS');
    });

    it('refuses to start without the file it is for', () => {
      const { SECRET_GATE_POLICY_FILE: _file, ...without } = vars;
      expect(() => merged('verifier', without)).toThrow(/SECRET_GATE_POLICY_FILE/);
    });
  });
});

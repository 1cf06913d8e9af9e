// Every documented VERIFIER_* setting through every runner mode, read back from the real verifier's
// effective configuration (`node verifier/dist/main.js --print-config`): the value each takes is
// the one it takes when the verifier runs alone from the same variables (the docs' other command),
// and it differs from what the mode would have used without it. What a mode cannot honour stops
// the start with one line naming the variable. `--production` shares the dev run's function
// (orchestrate.ts); only where the verifier listens differs, and that is the runner's.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ENVIRONMENT } from '../verifier/src/config/load.js';
import { REMOVED_VARIABLES } from '../verifier/src/config/redis.js';
import { verifierEnv } from './service-env.js';
import { REPO_ROOT, type OwnIdp } from './stack.js';
import { runnerVerifierSettings } from './verifier-settings.js';

const DEV_ISSUER = 'http://127.0.0.1:8081';
const OWN_ISSUER = 'https://idp.example.test/realms/apps';
const AUDIENCE = 'secret-gate-api';

const scratch = mkdtempSync(join(tmpdir(), 'sg-settings-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
/** Files the settings name: NGINX's edge key, a CA bundle for the shared store. */
const EDGE_KEY_FILE = join(scratch, 'edge-key');
const CA_FILE = join(scratch, 'redis-ca.pem');
/** The decision log's subject-hash key. */
const DECISION_LOG_KEY_FILE = join(scratch, 'decision-log-key');
writeFileSync(EDGE_KEY_FILE, 'e'.repeat(64), { mode: 0o600 });
writeFileSync(DECISION_LOG_KEY_FILE, 'd'.repeat(64), { mode: 0o600 });
writeFileSync(CA_FILE, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');

/** A valid value, other than the default, for every setting a run leaves to the operator. */
const SAMPLES: Readonly<Record<string, string>> = {
  VERIFIER_AUDIENCE: 'notes-api',
  VERIFIER_JWKS_URI: 'https://idp.example.test/keys',
  VERIFIER_ALGORITHMS: 'ES256',
  VERIFIER_CLOCK_TOLERANCE: '7s',
  VERIFIER_REQUIRE_TYP: 'JWT',
  VERIFIER_MAX_TOKEN_AGE: '2h',
  VERIFIER_ALLOW_HTTP: 'true',
  VERIFIER_PRESET: 'keycloak',
  VERIFIER_SCOPE_CLAIMS: 'scp',
  VERIFIER_AUDIENCE_CLAIM: 'client_id',
  VERIFIER_REQUIRE_CLAIMS: 'token_use=access',
  VERIFIER_REFUSE_CLAIMS: 'nonce,at_hash,events,amr',
  VERIFIER_LOGOUT_AUDIENCES: 'spa-demo,other-spa',
  VERIFIER_REQUIRED_SCOPES: 'notes:read',
  VERIFIER_DPOP: 'required',
  VERIFIER_REVOCATION: 'required',
  VERIFIER_CLIENT_CLAIM: 'client_id',
  VERIFIER_LOG_LEVEL: 'debug',
  VERIFIER_CACHE_MAX_ENTRIES: '5000',
  VERIFIER_CACHE_MAX_BYTES: '8m',
  VERIFIER_CACHE_MAX_TTL: '90s',
  VERIFIER_EDGE_CACHE_TTL: '3s',
  VERIFIER_VERIFY_RATE: '50r/s',
  VERIFIER_VERIFY_BURST: '60',
  VERIFIER_JWKS_REFRESH: '2m',
  VERIFIER_JWKS_COOLDOWN: '5s',
  VERIFIER_JWKS_MAX_STALE: '1h',
  VERIFIER_FETCH_TIMEOUT: '3s',
  VERIFIER_RELOAD_POLL: '2s',
  VERIFIER_RELOAD_SETTLE: '500ms',
  VERIFIER_METRICS_LISTEN: '127.0.0.1:9464',
  VERIFIER_DPOP_ALGORITHMS: 'ES256,EdDSA',
  VERIFIER_DPOP_IAT_WINDOW: '30s',
  VERIFIER_DPOP_REPLAY_MAX_ENTRIES: '2000',
  VERIFIER_DPOP_NONCE_KEY: 'k'.repeat(40),
  VERIFIER_REVOCATION_MAX_LATENCY: '4s',
  VERIFIER_LOGOUT_TOKEN_MAX_AGE: '90s',
  VERIFIER_REVOCATION_REPLAY_MAX_ENTRIES: '3000',
  VERIFIER_SSF_TRANSMITTER: 'https://ssf.example.test',
  VERIFIER_SSF_AUDIENCE: 'https://gate.example.test',
  VERIFIER_SSF_PUSH: 'false',
  VERIFIER_SSF_POLL_ENDPOINT: 'https://ssf.example.test/poll',
  VERIFIER_SSF_POLL_INTERVAL: '20s',
  VERIFIER_SSF_POLL_TOKEN: 'poll-token',
  VERIFIER_SSF_ALLOW_HTTP: 'true',
  VERIFIER_ALLOWED_CLIENTS: 'spa-demo,admin-app',
  VERIFIER_EDGE_KEY_FILE: EDGE_KEY_FILE,
  VERIFIER_DECISION_LOG_KEY_FILE: DECISION_LOG_KEY_FILE,
  VERIFIER_DECISION_LOG_SUBJECT: 'plain',
  VERIFIER_REDIS_URL: 'redis://127.0.0.1:6390',
  VERIFIER_REDIS_USERNAME: 'gate',
  VERIFIER_REDIS_PASSWORD: 'redis-password',
  VERIFIER_REDIS_SENTINEL_PASSWORD: 'sentinel-password',
  VERIFIER_REDIS_CA_FILE: CA_FILE,
  VERIFIER_REDIS_ALLOW_PLAINTEXT: 'true',
  VERIFIER_REDIS_WAIT_REPLICAS: '2',
  VERIFIER_REDIS_WAIT_TIMEOUT: '1s',
  VERIFIER_SET_MAX_AGE: '30m',
  VERIFIER_REVOCATION_VIEW_MAX_ENTRIES: '4000',
  VERIFIER_REVOCATION_RECEIVER_RATE: '9r/s',
  VERIFIER_REVOCATION_RECEIVER_BURST: '30',
  VERIFIER_RESOURCE_METADATA_URL: 'https://gate.example.test/.well-known/oauth-protected-resource',
  VERIFIER_ACR_VALUES: 'gold 2',
  VERIFIER_MAX_AGE: '10m',
  VERIFIER_AMR_VALUES: 'mfa',
  VERIFIER_ACR_CLAIM: 'https://gate.example.test/acr',
  VERIFIER_AMR_CLAIM: 'methods',
  VERIFIER_AUTH_TIME_CLAIM: 'https://gate.example.test/auth_time',
};
/** Settings whose value names the run's own issuer, by mode. */
const ISSUER_SAMPLES = (issuer: string) => ({ VERIFIER_SSF_EMAIL_ISSUER: issuer });
/** The tokeninfo issuer's own setting: only with a preset of that kind (`google`). */
const TOKENINFO = { VERIFIER_TOKENINFO_URI: 'https://tokeninfo.example.test/check' };
/** What a run decides itself, by mode: these stop the start instead. */
const DECIDED = {
  dev: ['VERIFIER_LISTEN', 'VERIFIER_ISSUER', 'VERIFIER_JWKS_URI'],
  own: ['VERIFIER_LISTEN'],
} as const;

type Mode = keyof typeof DECIDED;
type Printed = Record<string, unknown>;

function printConfig(env: Record<string, string>): Printed {
  const run = spawnSync(
    process.execPath,
    [join(REPO_ROOT, 'verifier/dist/main.js'), '--print-config'],
    { env: { PATH: process.env.PATH, ...env }, encoding: 'utf8', timeout: 20_000 },
  );
  if (run.status !== 0) throw new Error(`verifier --print-config: ${run.stderr}`);
  return JSON.parse(run.stdout) as Printed;
}

/** The verifier as `mode` starts it with the operator's `variables` (the CLI's flag fallbacks). */
function throughRunner(mode: Mode, variables: Record<string, string>): Printed {
  const own: OwnIdp | undefined =
    mode === 'dev'
      ? undefined
      : {
          issuer: OWN_ISSUER,
          jwksUri: variables.VERIFIER_JWKS_URI,
          preset: variables.VERIFIER_PRESET,
          logoutAudiences: variables.VERIFIER_LOGOUT_AUDIENCES?.split(','),
        };
  const issuer = own?.issuer ?? DEV_ISSUER;
  const settings = runnerVerifierSettings({
    own,
    issuer,
    audience: variables.VERIFIER_AUDIENCE ?? AUDIENCE,
    variables,
  });
  const file = join(scratch, `${mode}-${Object.keys(variables).length}.json`);
  writeFileSync(file, JSON.stringify(settings.document));
  return printConfig({
    ...verifierEnv({ listen: '127.0.0.1:1', configFile: file }),
    ...settings.env,
  });
}

/** The value at a setting's place: the single issuer by its `iss`, the rest by their path. */
function at(printed: Printed, path: string, issuer: string): unknown {
  const keys = path.startsWith('issuers[0].')
    ? ['issuers', issuer, ...path.slice('issuers[0].'.length).split('.')]
    : path.split('.');
  return keys.reduce<unknown>(
    (value, key) => (value as Record<string, unknown> | undefined)?.[key],
    printed,
  );
}

const rows = ENVIRONMENT.filter(
  (row) =>
    row.env !== 'VERIFIER_ISSUER' && (row.env in SAMPLES || row.env in ISSUER_SAMPLES(DEV_ISSUER)),
);

describe('documented settings through every runner mode', () => {
  it('has a sample for every documented setting', () => {
    const covered = new Set([
      ...Object.keys(SAMPLES),
      ...Object.keys(ISSUER_SAMPLES(DEV_ISSUER)),
      ...Object.keys(TOKENINFO),
      'VERIFIER_ISSUER',
      'VERIFIER_CONFIG',
      'VERIFIER_LISTEN',
    ]);
    expect(ENVIRONMENT.map((row) => row.env).filter((name) => !covered.has(name))).toEqual([]);
  });

  describe.each(['dev', 'own'] as const)('%s mode', (mode) => {
    const issuer = mode === 'dev' ? DEV_ISSUER : OWN_ISSUER;
    const given = Object.fromEntries(
      Object.entries({ ...SAMPLES, ...ISSUER_SAMPLES(issuer) }).filter(
        ([name]) => !(DECIDED[mode] as readonly string[]).includes(name),
      ),
    );
    // The same variables, the verifier alone (single-issuer variables): the documented meaning.
    const alone = printConfig({ VERIFIER_ISSUER: issuer, ...given });
    const withSettings = throughRunner(mode, given);
    const without = throughRunner(mode, {});

    it.each(rows.filter((row) => row.env in given).map((row) => [row.env, row.path] as const))(
      '%s takes effect',
      (_name, path) => {
        expect(at(withSettings, path, issuer)).toEqual(at(alone, path, issuer));
        expect(at(withSettings, path, issuer)).not.toEqual(at(without, path, issuer));
      },
    );

    // A removed name stops the verifier, naming the setting that replaced it.
    it.each(Object.entries(REMOVED_VARIABLES))('%s (removed) names %s', (name, now) => {
      const settings = runnerVerifierSettings({
        own: mode === 'dev' ? undefined : { issuer: OWN_ISSUER },
        issuer,
        audience: AUDIENCE,
        variables: {},
      });
      const file = join(scratch, `${mode}-removed.json`);
      writeFileSync(file, JSON.stringify(settings.document));
      const run = spawnSync(
        process.execPath,
        [join(REPO_ROOT, 'verifier/dist/main.js'), '--check-config'],
        {
          env: {
            PATH: process.env.PATH,
            ...verifierEnv({ listen: '127.0.0.1:1', configFile: file }),
            [name]: 'redis://127.0.0.1:6391',
          },
          encoding: 'utf8',
          timeout: 20_000,
        },
      );
      expect(run.status).toBe(2);
      expect(run.stderr).toContain(`${name}: removed; use ${now}`);
      expect(run.stderr).not.toContain('6391');
    });

    it.each(DECIDED[mode].map((name) => [name]))('%s stops the start with one line', (name) => {
      const run = () =>
        runnerVerifierSettings({
          own: mode === 'dev' ? undefined : { issuer: OWN_ISSUER },
          issuer,
          audience: AUDIENCE,
          variables: { [name]: name === 'VERIFIER_LISTEN' ? '127.0.0.1:9999' : '/etc/x' },
        });
      expect(run).toThrow(new RegExp(`^${name}: [^\\n]+$`));
    });
  });

  it('takes the tokeninfo endpoint with the google preset in the own-IdP mode', () => {
    const variables = { ...TOKENINFO, VERIFIER_PRESET: 'google' };
    const google = 'https://accounts.google.com';
    const settings = runnerVerifierSettings({
      own: { issuer: google, preset: 'google' },
      issuer: google,
      audience: 'app.apps.googleusercontent.com',
      variables,
    });
    const file = join(scratch, 'google.json');
    writeFileSync(file, JSON.stringify(settings.document));
    const printed = printConfig({ ...verifierEnv({ listen: '127.0.0.1:1', configFile: file }) });
    expect(at(printed, 'issuers[0].endpoint', google)).toBe(TOKENINFO.VERIFIER_TOKENINFO_URI);
  });

  it.each([
    ['VERIFIER_PORT', '8090', /^VERIFIER_PORT: the runner's variable is SECRET_GATE_VERIFIER_PORT/],
    ['VERIFIER_SCOPE', 'a', /^VERIFIER_SCOPE: not a verifier setting/],
    ['VERIFIER_AUDIENCE', 'other-api', /^VERIFIER_AUDIENCE: "other-api" contradicts --audience/],
  ])('refuses %s=%s in one line', (name, value, message) => {
    expect(() =>
      runnerVerifierSettings({
        own: { issuer: OWN_ISSUER },
        issuer: OWN_ISSUER,
        audience: AUDIENCE,
        variables: { [name]: value },
      }),
    ).toThrow(message);
  });
});

// The operator's policies in every runner mode: one policy file (`npm start -- --config FILE` or
// VERIFIER_CONFIG) gives the same policies with the dev IdP and with --issuer, the operator's
// policy variables restrict every policy unless the file says otherwise, the named sets and the
// metadata's DPoP requirement follow from the policies, and a file the run cannot honour stops the
// start with one line per problem. Read back through the verifier's own loader and printer.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../verifier/src/config/load.js';
import { printableConfig } from '../verifier/src/config/print.js';
import { checkSetsMatch, checkVerifierConfig } from './verifier-check.js';
import { SettingsError, runnerVerifierSettings } from './verifier-settings.js';

const DEV_ISSUER = 'http://127.0.0.1:8081';
const OWN_ISSUER = 'https://idp.example.test/realms/apps';
const AUDIENCE = 'secret-gate-api';
const FILE = '/etc/secret-gate/policies.json';

/** The documented example: `/secret` and a step-up `payments` set for one client. */
const POLICIES = {
  policies: {
    secret: { scopes: ['secrets:read'] },
    payments: {
      scopes: ['secrets:read'],
      clients: ['spa-demo'],
      acrValues: ['urn:secret-gate:mfa'],
      maxAge: '5m',
    },
  },
};

type Mode = 'dev' | 'own';
type Printed = { policies: Record<string, Record<string, unknown>> };

function settings(
  mode: Mode,
  variables: Record<string, string> = {},
  file: unknown = undefined,
  policyFile: string | undefined = file === undefined ? undefined : FILE,
) {
  const issuer = mode === 'dev' ? DEV_ISSUER : OWN_ISSUER;
  return runnerVerifierSettings({
    own: mode === 'dev' ? undefined : { issuer },
    issuer,
    audience: AUDIENCE,
    variables,
    policyFile,
    read: (path) => {
      if (path !== FILE) throw new Error(`ENOENT: no such file '${path}'`);
      return typeof file === 'string' ? file : JSON.stringify(file);
    },
  });
}

/** What `--print-config` would print for the document a run writes. */
function printed(run: ReturnType<typeof settings>): Printed {
  const config = loadConfig({ VERIFIER_CONFIG: 'run.json', ...run.env }, () =>
    JSON.stringify(run.document),
  );
  return JSON.parse(printableConfig(config)) as Printed;
}

/** What NGINX and the SPA take from the policies of the document a run writes. */
const facts = (run: ReturnType<typeof settings>) =>
  checkVerifierConfig({ VERIFIER_CONFIG: 'run.json', ...run.env }, FILE, () =>
    JSON.stringify(run.document),
  );

/** Each policy without its issuers (the one thing a mode decides). */
const policiesOf = (run: ReturnType<typeof settings>) =>
  Object.fromEntries(
    Object.entries(printed(run).policies).map(([name, { issuers: _, ...rest }]) => [name, rest]),
  );

/** The problem lines of a run that cannot start. */
function problems(run: () => unknown): readonly string[] {
  try {
    run();
  } catch (error) {
    if (error instanceof SettingsError) return error.problems;
    throw error;
  }
  throw new Error('the run started');
}

describe('a policy file under npm start', () => {
  it('gives the same policies with the dev IdP and with --issuer, each under the run issuer', () => {
    const dev = settings('dev', {}, POLICIES);
    const own = settings('own', {}, POLICIES);
    expect(policiesOf(dev)).toEqual(policiesOf(own));
    expect(Object.keys(printed(dev).policies)).toEqual(['secret', 'payments']);
    expect(printed(own).policies.payments).toMatchObject({
      issuers: [OWN_ISSUER],
      clients: ['spa-demo'],
      acrValues: ['urn:secret-gate:mfa'],
      maxAge: 300,
    });
  });

  it('is read from VERIFIER_CONFIG when --config is not given', () => {
    const run = settings('own', { VERIFIER_CONFIG: FILE }, POLICIES, undefined);
    expect(printed(run).policies.payments?.maxAge).toBe(300);
  });

  it('offers every named policy as a set, and none beyond the policies', () => {
    const file = { policies: { ...POLICIES.policies, 'audit-log': { scopes: ['audit:read'] } } };
    expect(facts(settings('own', {}, file)).setNames).toEqual(['payments', 'audit-log']);
    expect(facts(settings('own')).setNames).toEqual([]);
    expect(facts(settings('dev')).setNames).toEqual(['payments']);
  });

  it('adds its own issuers beside the run issuer, and its settings to the run', () => {
    const other = 'https://partner.example.test';
    const run = settings(
      'own',
      {},
      {
        logLevel: 'debug',
        issuers: [{ issuer: other, audience: 'partner-api', jwksUri: `${other}/keys` }],
        policies: { secret: {}, partner: { issuers: [other] } },
      },
    );
    const config = loadConfig({ VERIFIER_CONFIG: 'run.json' }, () => JSON.stringify(run.document));
    expect([...config.issuers.keys()]).toEqual([OWN_ISSUER, other]);
    expect(config.policies.get('partner')?.issuers).toEqual([other]);
    expect(config.policies.get('secret')?.issuers).toEqual([OWN_ISSUER]);
    expect(config.logLevel).toBe('debug');
  });
});

describe("the operator's policy variables", () => {
  it.each(['dev', 'own'] as const)('restrict every policy of the %s run', (mode) => {
    const variables = {
      VERIFIER_ALLOWED_CLIENTS: 'spa-demo',
      VERIFIER_DPOP: 'required',
      VERIFIER_REVOCATION: 'required',
      VERIFIER_REQUIRED_SCOPES: 'secrets:read',
    };
    const file = mode === 'own' ? POLICIES : undefined;
    for (const policy of Object.values(printed(settings(mode, variables, file)).policies))
      expect(policy).toMatchObject({
        clients: ['spa-demo'],
        dpop: 'required',
        revocation: 'required',
        scopes: ['secrets:read'],
      });
  });

  it('apply step-up to every policy of the dev run, payments included', () => {
    const run = settings('dev', { VERIFIER_ACR_VALUES: 'gold', VERIFIER_MAX_AGE: '60' });
    for (const policy of Object.values(printed(run).policies))
      expect(policy).toMatchObject({ acrValues: ['gold'], maxAge: 60 });
  });

  it('leave a field the policy file sets as the file says', () => {
    const run = settings('own', { VERIFIER_ALLOWED_CLIENTS: 'partner-app' }, POLICIES);
    expect(printed(run).policies.payments?.clients).toEqual(['spa-demo']);
    expect(printed(run).policies.secret?.clients).toEqual(['partner-app']);
  });

  it('make the metadata require DPoP-bound tokens only when every policy requires them', () => {
    expect(facts(settings('dev', { VERIFIER_DPOP: 'required' })).dpopRequired).toBe(true);
    expect(facts(settings('dev')).dpopRequired).toBe(false);
    const one = { policies: { secret: { dpop: 'allowed' }, payments: {} } };
    expect(facts(settings('own', { VERIFIER_DPOP: 'required' }, one)).dpopRequired).toBe(false);
  });
});

describe('a policy file the run cannot honour', () => {
  it('that is not JSON is one line naming the file', () => {
    expect(problems(() => settings('own', {}, '{ "policies": '))).toEqual([
      expect.stringMatching(new RegExp(`^${FILE}: not valid JSON \\(`)),
    ]);
  });

  it('that cannot be read is one line naming the file', () => {
    expect(problems(() => settings('own', {}, POLICIES, '/nowhere.json'))).toEqual([
      expect.stringMatching(/^\/nowhere\.json: cannot be read \(/),
    ]);
  });

  it('is one line per problem: a listener, an issuer contradicting a flag, a second file', () => {
    const file = {
      listen: '127.0.0.1:9999',
      issuers: [{ issuer: OWN_ISSUER, audience: 'other-api' }],
      policies: { secret: {} },
    };
    expect(problems(() => settings('own', { VERIFIER_CONFIG: '/other.json' }, file))).toEqual([
      `VERIFIER_CONFIG: "/other.json" contradicts --config "${FILE}"`,
    ]);
    expect(problems(() => settings('own', {}, file))).toEqual([
      `${FILE}: listen: npm start places the verifier itself (--verifier-port; a unix socket otherwise)`,
      `${FILE}: issuers[0].audience: "other-api" contradicts --audience "${AUDIENCE}"`,
    ]);
  });
});

describe("the run's configuration checked before anything starts", () => {
  it("names a policy file's unknown field by its place in the file, one line each", () => {
    const run = settings(
      'own',
      {},
      { policies: { secret: { scope: 'a' }, payments: { dpop: 'yes' } } },
    );
    const env = { VERIFIER_CONFIG: '/run/verifier.json', VERIFIER_LISTEN: '127.0.0.1:1' };
    const lines = problems(() =>
      checkVerifierConfig(env, FILE, () => JSON.stringify(run.document)),
    );
    expect(lines).toEqual([
      expect.stringMatching(new RegExp(`^${FILE}: policies\\.secret: .*"scope"`)),
      expect.stringMatching(new RegExp(`^${FILE}: policies\\.payments\\.dpop: `)),
    ]);
  });
});

describe('the secrets file against the policies', () => {
  const secrets = { default: {}, clients: {}, policies: { payments: {}, audit: {} } };
  const STRICT = { sets: true, policies: true };
  const both = { setNames: ['payments', 'reports'], dpopRequired: false };

  it('names each set without a policy and each policy without a set, with both files', () => {
    expect(
      problems(() => checkSetsMatch('/etc/secrets.json', secrets, both, FILE, STRICT)),
    ).toEqual([
      `policy "reports" (${FILE}) has no set in /etc/secrets.json: add "policies": { "reports": … } there, or remove the policy`,
      `set "audit" in /etc/secrets.json has no policy in ${FILE}: add policies.audit there (npm start -- --config FILE), or remove the set`,
    ]);
  });

  it("lets the built-in dev file hold sets the run does not serve, and the run's own policies go without", () => {
    const facts = { setNames: ['payments', 'reports'], dpopRequired: false };
    const lax = { sets: false, policies: false };
    expect(() => checkSetsMatch('dev.json', secrets, facts, FILE, lax)).not.toThrow();
    expect(() => checkSetsMatch('own.json', secrets, facts, FILE, STRICT)).toThrow(SettingsError);
  });
});

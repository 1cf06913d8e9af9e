// One policy file, every way the gate runs (issue 36's table): `npm start` with the dev IdP, `npm
// start -- --issuer` (against a second dev IdP), docker compose with the dev IdP and with your own
// (the files rendered as compose merges them) and the Kubernetes base and overlays (example,
// redis-sentinel, redis-cluster; rendered as kustomize does) give the same `--print-config`
// policies, and NGINX reads the same file there; the two modes that run here as processes give the
// same answers through real NGINX for one table of tokens.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, startStack, type MintOptions, type Stack } from '../../stack/start-stack.js';
import { runnerVerifierSettings } from '../../stack/verifier-settings.js';
import { loadConfig } from '../../verifier/src/config/load.js';
import { printableConfig } from '../../verifier/src/config/print.js';
import { podSpec, renderWithPolicyFile, type Manifest } from '../deploy/kustomize.js';
import { composeService } from '../support/compose-render.js';
import { allSecretValues, type SecretsFile } from '../support/secrets.js';

const MFA = 'urn:secret-gate:mfa';
const AUDIENCE = 'secret-gate-api';
/**
 * The operator's file: one allowed client and a scope everywhere, DPoP required on `bound`, a
 * step-up on `payments`. No issuers: under the runner each policy takes the run's.
 */
const POLICIES = {
  policies: {
    secret: { scopes: ['secrets:read'], clients: ['spa-demo'] },
    payments: { scopes: ['secrets:read'], clients: ['spa-demo'], acrValues: [MFA], maxAge: '5m' },
    bound: { scopes: ['secrets:read'], clients: ['spa-demo'], dpop: 'required' },
  },
} as const;
const SETS = Object.keys(POLICIES.policies).filter((name) => name !== 'secret');

/**
 * The same file as a whole verifier document, as compose and Kubernetes take it (no runner adds
 * the issuer there): `issuer` added, every policy naming it.
 */
function wholeDocument(issuer: Record<string, unknown> & { issuer: string }) {
  const policies = Object.fromEntries(
    Object.entries(POLICIES.policies).map(([name, policy]) => [
      name,
      { issuers: [issuer.issuer], ...policy },
    ]),
  );
  return { issuers: [issuer], policies };
}

type Printed = { policies: Record<string, Record<string, unknown>> };

/** The policies `--print-config` shows, each without its issuers (what the mode decides). */
const policiesOf = (printed: Printed) =>
  Object.fromEntries(
    Object.entries(printed.policies).map(([name, { issuers: _, ...rest }]) => [name, rest]),
  );

/** `--print-config`'s document for a configuration read from `env` and the files `read` gives. */
function printedFrom(env: Record<string, string>, read: (path: string) => string): Printed {
  return JSON.parse(printableConfig(loadConfig(env, read))) as Printed;
}

const OWN_RUN_ISSUER = 'http://127.0.0.1:9181';

/**
 * `npm start` (`own`: with `--issuer`) and `--config policies.json` holding `file`, through the
 * runner.
 */
function runnerPrinted(own: boolean, file: object = POLICIES): Printed {
  const issuer = own ? OWN_RUN_ISSUER : 'http://127.0.0.1:8081';
  const run = runnerVerifierSettings({
    own: own ? { issuer, jwksUri: `${issuer}/jwks` } : undefined,
    issuer,
    audience: AUDIENCE,
    variables: {},
    policyFile: 'policies.json',
    read: () => JSON.stringify(file),
  });
  return printedFrom({ VERIFIER_CONFIG: 'run.json', ...run.env }, () =>
    JSON.stringify(run.document),
  );
}

/**
 * The verifier of the compose `files` with the documented variables, the file mounted; NGINX
 * mounts the same file and takes its set names from it.
 */
function composePrinted(files: readonly string[], vars: Record<string, string>, document: object) {
  const all = { ...vars, SECRET_GATE_POLICY_FILE: './policies.json' };
  const verifier = composeService(files, 'verifier', all);
  const nginx = composeService(files, 'nginx', all);
  const target = verifier.env.VERIFIER_CONFIG ?? '';
  expect(verifier.volumes).toContain(`./policies.json:${target}:ro`);
  expect(nginx.env.SG_POLICY_FILE).toBe(target);
  expect(nginx.volumes).toContain(`./policies.json:${target}:ro`);
  expect(nginx.env).not.toHaveProperty('SG_SPA_SECRET_SETS');
  // The file, or the edge key the verifier makes on its first start.
  return printedFrom(verifier.env, (path) =>
    path === target ? JSON.stringify(document) : 'k'.repeat(64),
  );
}

/**
 * Kubernetes (`build`: the base or an overlay) with the documented line of your overlay: the
 * file, which NGINX reads from the same ConfigMap at the same path.
 */
function kubernetesPrinted(build: string, document: object): Printed {
  const manifests = renderWithPolicyFile(join(REPO_ROOT, 'deploy/kubernetes', build), document);
  const data = (name: string) =>
    (manifests.find((m) => m.kind === 'ConfigMap' && m.metadata.name === name)?.data ??
      {}) as Record<string, string>;
  const deployment = manifests.find((m) => m.kind === 'Deployment') as Manifest;
  const containers = podSpec(deployment).containers;
  const verifier = containers.find((c) => c.name === 'verifier');
  const nginx = containers.find((c) => c.name === 'nginx');
  const nginxEnv = data(nginx?.envFrom?.[0]?.configMapRef?.name ?? '');
  expect(nginxEnv).not.toHaveProperty('SG_SPA_SECRET_SETS');
  const configMount = (c: typeof nginx) =>
    c?.volumeMounts?.find((m) => m.name === 'verifier-config')?.mountPath;
  expect(configMount(nginx)).toBe(configMount(verifier));
  // What the container gets: its own `env`, then the ConfigMaps it names (`envFrom`).
  const env: Record<string, string> = {};
  for (const from of verifier?.envFrom ?? [])
    Object.assign(env, data(from.configMapRef?.name ?? ''));
  for (const { name, value } of verifier?.env ?? []) if (value !== undefined) env[name] = value;
  const file = data('secret-gate-verifier')['verifier.json'] ?? '';
  expect(nginxEnv.SG_POLICY_FILE).toBe(env.VERIFIER_CONFIG);
  return printedFrom(env, (path) => (path === env.VERIFIER_CONFIG ? file : 'k'.repeat(64)));
}

describe('one policy file in every run mode', () => {
  const expected = policiesOf(runnerPrinted(false));
  const ownIssuer = {
    type: 'jwt',
    issuer: 'https://login.example.com/realms/acme',
    audience: AUDIENCE,
  };
  const composeDev = JSON.parse(
    readFileSync(join(REPO_ROOT, 'stack/compose/verifier.json'), 'utf8'),
  ) as { issuers: [Record<string, unknown> & { issuer: string }] };

  it('gives the documented policies under npm start with the dev IdP', () => {
    expect(Object.keys(expected)).toEqual(['secret', 'payments', 'bound']);
    expect(expected.payments).toMatchObject({ clients: ['spa-demo'], acrValues: [MFA] });
    expect(expected.payments?.maxAge).toBe(300);
    expect(expected.bound?.dpop).toBe('required');
  });

  it.each([
    ['npm start -- --issuer', () => runnerPrinted(true)],
    [
      'npm start -- --issuer, the file as compose takes it',
      () => runnerPrinted(true, wholeDocument({ type: 'jwt', issuer: OWN_RUN_ISSUER })),
    ],
    [
      'docker compose (dev IdP)',
      () => composePrinted(['docker-compose.yaml'], {}, wholeDocument(composeDev.issuers[0])),
    ],
    [
      'docker compose (your IdP, the policy-file overlay)',
      () =>
        composePrinted(
          ['docker-compose.yaml', 'docker-compose.own-idp.yaml', 'docker-compose.policy-file.yaml'],
          {
            SECRET_GATE_ISSUER: ownIssuer.issuer,
            SECRET_GATE_IDP_ORIGIN: 'https://login.example.com',
            SECRET_GATE_CLIENT_ID: 'spa-demo',
            SECRET_GATE_SECRETS_FILE: './secrets.json',
          },
          wholeDocument(ownIssuer),
        ),
    ],
    [
      'Kubernetes, the example overlay',
      () => kubernetesPrinted('overlays/example', wholeDocument(ownIssuer)),
    ],
    ['Kubernetes, the base', () => kubernetesPrinted('base', wholeDocument(ownIssuer))],
    [
      'Kubernetes, the redis-sentinel overlay',
      () => kubernetesPrinted('overlays/redis-sentinel', wholeDocument(ownIssuer)),
    ],
    [
      'Kubernetes, the redis-cluster overlay',
      () => kubernetesPrinted('overlays/redis-cluster', wholeDocument(ownIssuer)),
    ],
  ])('gives the same --print-config policies under %s', (_mode, printed) => {
    expect(policiesOf(printed())).toEqual(expected);
  });
});

const secrets = {
  default: { 'x-api-key': 'run-modes-default' },
  clients: { 'spa-demo': { 'x-api-key': 'run-modes-spa' } },
  policies: {
    payments: { default: { 'payments-key': 'run-modes-payments' }, clients: {} },
    bound: { default: { 'bound-key': 'run-modes-bound' }, clients: {} },
  },
} satisfies SecretsFile;

let scratch: string;
/** `npm start --config`: the dev IdP, whose tokens both stacks accept. */
let dev: Stack;
/** `npm start -- --issuer <dev's IdP> --config`: the same IdP as someone else's. */
let own: Stack;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'sg-run-modes-'));
  const secretsFile = join(scratch, 'secrets.json');
  writeFileSync(secretsFile, JSON.stringify(secrets), { mode: 0o644 });
  const policyFile = join(scratch, 'policies.json');
  writeFileSync(policyFile, JSON.stringify(POLICIES));
  dev = await startStack({ secretsFile, policyFile });
  own = await startStack({
    secretsFile,
    policyFile,
    ownIdp: { issuer: dev.urls.idp, jwksUri: `${dev.urls.idp}/jwks`, clientId: 'spa-demo' },
  });
}, 240_000);

afterAll(async () => {
  await own?.stop();
  await dev?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const now = () => Math.floor(Date.now() / 1000);

/** [row, path, the token's shape when asked, status, what the WWW-Authenticate says (undefined: nothing to check)]. */
const TOKENS: [string, string, () => MintOptions, number, RegExp | undefined][] = [
  ['the allowed client', '/secret', () => ({ clientId: 'spa-demo' }), 200, undefined],
  ['another client', '/secret', () => ({ clientId: 'partner-app' }), 403, undefined],
  [
    'a token without the scope',
    '/secret',
    () => ({ clientId: 'spa-demo', scope: 'openid' }),
    403,
    /^Bearer realm="secret-gate", error="insufficient_scope", scope="secrets:read"/,
  ],
  [
    'a bearer token where DPoP is required',
    '/secret/bound',
    () => ({ clientId: 'spa-demo' }),
    401,
    /^DPoP error="invalid_token", error_description="a DPoP-bound token and proof are required"/,
  ],
  [
    'a weak acr on the step-up set',
    '/secret/payments',
    () => ({ clientId: 'spa-demo', claims: { acr: 'urn:secret-gate:password', auth_time: now() } }),
    401,
    new RegExp(
      `^Bearer realm="secret-gate", error="insufficient_user_authentication", error_description="A different authentication level is required", acr_values="${MFA}", max_age="300"`,
    ),
  ],
  [
    'the step-up acr on the step-up set',
    '/secret/payments',
    () => ({ clientId: 'spa-demo', claims: { acr: MFA, auth_time: now() } }),
    200,
    undefined,
  ],
];

describe.each([
  ['npm start', () => dev],
  ['npm start -- --issuer', () => own],
])('through NGINX under %s', (_mode, stack) => {
  it('prints the same policies as the table above from its own files', () => {
    const run = spawnSync(
      process.execPath,
      [join(REPO_ROOT, 'verifier/dist/main.js'), '--print-config'],
      { env: { ...process.env, ...stack().env.verifier }, encoding: 'utf8' },
    );
    expect(run.status, run.stderr).toBe(0);
    expect(policiesOf(JSON.parse(run.stdout) as Printed)).toEqual(policiesOf(runnerPrinted(false)));
  });

  it("offers the file's named sets, and answers any other name 404 at the edge", async () => {
    const config = (await (await fetch(`${stack().urls.gate}/config.json`)).json()) as {
      secretSets: string;
    };
    expect(config.secretSets).toBe(SETS.join(' '));
    const token = await dev.mintToken({ clientId: 'spa-demo' });
    const unknown = await fetch(`${stack().urls.gate}/secret/unknown`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(unknown.status).toBe(404);
  });

  it.each(TOKENS)('answers %s', async (_row, path, shape, status, challenge) => {
    // Minted by the dev IdP: the own-IdP stack takes it as its issuer's.
    const token = await dev.mintToken(shape());
    const response = await fetch(`${stack().urls.gate}${path}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const body = await response.text();
    expect(response.status).toBe(status);
    if (challenge !== undefined)
      expect(response.headers.get('www-authenticate')).toMatch(challenge);
    if (status !== 200)
      for (const value of allSecretValues(secrets)) expect(body).not.toContain(value);
  });
});

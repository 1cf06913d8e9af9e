// `npm start`: the whole stack on loopback without Docker. Prints the URLs and a ready-to-paste
// curl with a fresh token; Ctrl-C (or SIGTERM) stops every child process before exiting.
import { parseArgs } from 'node:util';
import { join } from 'node:path';
import { REPO_ROOT, startStack, type Stack } from './start-stack.js';
import { startProductionStack } from './production.js';
import { DEFAULT_PORTS } from './service-env.js';
import { discoveryReport } from './discovery-report.js';
import { SettingsError, verifierVariables } from './verifier-settings.js';
import { tracingEnv } from './trace-env.js';

const HELP = `usage: npm start -- [options]

  --port N            NGINX port (env PORT, default ${DEFAULT_PORTS.nginx}; 0 = any free port)
  --idp-port N        dev IdP port (env IDP_PORT, default ${DEFAULT_PORTS.idp})
  --verifier-port N   the verifier on this loopback port instead (env SECRET_GATE_VERIFIER_PORT;
                      0 = any free port), NGINX proving its calls with a key of the run; default:
                      a unix socket in the runtime directory that only NGINX reaches
  --runtime-dir DIR   rendered config, runtime files and logs (env RUNTIME_DIR, default run/)
  --secrets-file F    secrets file { default, clients } (env SECRETS_FILE, default nginx/secrets.dev.json)
  --config FILE       your policies (env VERIFIER_CONFIG): a verifier configuration whose "policies"
                      replace the run's and whose issuers and settings join them; VERIFIER_* policy
                      variables apply to every policy where the file leaves the field unset
                      (precedence: docs/configuration.md)
  --production        the production shape: unprivileged NGINX and verifier, verifier on a unix
                      socket, read-only config, no dev IdP control API
  --no-build          do not build missing verifier/dist or spa/dist, say which command to run
  SECRETS='{"k":"v"}' the original study's flat secrets JSON (docs/study.md), passed to NGINX as is
  VERIFIER_*=…        the verifier's settings (docs/configuration.md) reach it in every mode;
                      one it cannot honour here (VERIFIER_LISTEN) stops the start

  Your own IdP instead of the dev IdP (which is then not started; docs/connect-your-idp.md):
  --issuer URL        the exact "iss" of its access tokens; the SPA signs in against it
  --jwks-uri URL      its JWKS (default: OIDC discovery from the issuer)
  --audience AUD      the audience the verifier requires (default secret-gate-api)
  --preset NAME       rfc9068 (default), auth0, auth0-rfc9068, okta, entra, entra-v1, keycloak,
                      cognito or google
  --client-id ID      the SPA's client id at your IdP (default spa-demo)
  --logout-audience ID  accept its back-channel logout tokens addressed to this client id (the
                      SPA's; repeatable; env VERIFIER_LOGOUT_AUDIENCES): register the printed
                      /backchannel-logout URL at the IdP
`;

function parsePort(raw: string | undefined, fallback: number, name: string): number {
  if (raw === undefined || raw === '') return fallback;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new TypeError(`${name}: "${raw}" is not a port`);
  return port;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string' },
      'idp-port': { type: 'string' },
      'verifier-port': { type: 'string' },
      'runtime-dir': { type: 'string' },
      'secrets-file': { type: 'string' },
      config: { type: 'string' },
      'no-build': { type: 'boolean', default: false },
      production: { type: 'boolean', default: false },
      issuer: { type: 'string' },
      'jwks-uri': { type: 'string' },
      audience: { type: 'string' },
      preset: { type: 'string' },
      'client-id': { type: 'string' },
      'logout-audience': { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return;
  }
  const env = process.env;
  const verifierPort = values['verifier-port'] ?? env.SECRET_GATE_VERIFIER_PORT;
  const ports = {
    nginx: parsePort(values.port ?? env.PORT, DEFAULT_PORTS.nginx, '--port'),
    idp: parsePort(values['idp-port'] ?? env.IDP_PORT, DEFAULT_PORTS.idp, '--idp-port'),
    verifier: parsePort(verifierPort, DEFAULT_PORTS.verifier, '--verifier-port'),
  };
  const ownOnly = (['jwks-uri', 'preset', 'client-id', 'logout-audience'] as const).filter(
    (name) => values[name] !== undefined,
  );
  if (values.issuer === undefined && ownOnly.length > 0) {
    console.error(`--${ownOnly.join(', --')}: only with --issuer (your own IdP)`);
    process.exitCode = 2;
    return;
  }
  // A flag wins; the verifier's own variable stands in for it (the runner checks they agree).
  const variables = verifierVariables(env);
  const audience = values.audience ?? variables.VERIFIER_AUDIENCE;
  const logoutAudiences =
    values['logout-audience'] ?? variables.VERIFIER_LOGOUT_AUDIENCES?.split(/[\s,]+/);
  const ownIdp =
    values.issuer === undefined
      ? undefined
      : {
          issuer: values.issuer,
          jwksUri: values['jwks-uri'] ?? variables.VERIFIER_JWKS_URI,
          audience,
          preset: values.preset ?? variables.VERIFIER_PRESET,
          clientId: values['client-id'],
          logoutAudiences: logoutAudiences?.filter(Boolean),
        };
  const log = (line: string) => console.log(`· ${line}`);
  if (ownIdp !== undefined) {
    log(`your IdP, from its discovery document:`);
    for (const line of await discoveryReport(ownIdp.issuer)) log(`  ${line}`);
  }
  let stack: Stack;
  try {
    stack = await (values.production ? startProductionStack : startStack)({
      ports,
      // Only NGINX names the client the verifier limits: a socket only it reaches, unless asked.
      verifierSocket: verifierPort === undefined || verifierPort === '',
      runtimeDir: values['runtime-dir'] ?? env.RUNTIME_DIR ?? join(REPO_ROOT, 'run'),
      secretsFile: values['secrets-file'] ?? env.SECRETS_FILE,
      secrets: env.SECRETS || undefined,
      build: !values['no-build'],
      mintedDemo: true,
      log,
      verifierVariables: variables,
      ...(values.config === undefined ? {} : { policyFile: values.config }),
      env: tracingEnv(env),
      ...(audience === undefined ? {} : { audience }),
      ...(ownIdp === undefined ? {} : { ownIdp }),
    });
  } catch (error) {
    if (error instanceof SettingsError) {
      // A setting the run cannot honour: one line each, the configuration's exit code.
      console.error(`\nsecret-gate could not start:\n${error.message}`);
      process.exitCode = 2;
      return;
    }
    console.error(`\nsecret-gate could not start: ${(error as Error).message}`);
    process.exitCode = 1;
    return;
  }

  const { urls } = stack;
  // A terminal that went away must not crash the runner before its clean-up (EPIPE on a line).
  process.stdout.on('error', () => {});
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.prependOnceListener(signal, () => console.log(`\n${signal}: stopping secret-gate…`));
  }
  if (ownIdp !== undefined) {
    const logout = ownIdp.logoutAudiences?.length
      ? `  logout     ${urls.gate}/backchannel-logout  (register it at your IdP as the back-channel logout URI of ${ownIdp.logoutAudiences.join(', ')})`
      : '  logout     off (--logout-audience SPA_CLIENT_ID turns the back-channel logout receiver on)';
    console.log(`
secret-gate is running against your IdP (Ctrl-C stops everything)

  app        ${urls.gate}/
  liveness   ${urls.hello}
  secrets    ${urls.secret}
  issuer     ${ownIdp.issuer}${ownIdp.preset === undefined ? '' : `  (preset ${ownIdp.preset})`}
  audience   ${stack.audience}  (the tokens' "aud" must contain it)
${logout}
  verifier   ${urls.verifier}
  logs       ${join(stack.runtimeDir, 'logs')}
  refusals   ${stack.files.logs.verifier}  (why a token was refused: which claim, what was expected)

With an access token from your IdP (scope secrets:read):

  curl -i ${urls.secret} -H "Authorization: Bearer $TOKEN"
`);
    await new Promise<never>(() => {});
  }

  const token = await stack.mintToken();
  console.log(`
secret-gate is running (Ctrl-C stops everything)

  app        ${urls.gate}/
  liveness   ${urls.hello}
  secrets    ${urls.secret}
  dev IdP    ${urls.issuer}  (issuer; demo clients spa-demo, partner-app)
  verifier   ${urls.verifier}
  logs       ${join(stack.runtimeDir, 'logs')}
  refusals   ${stack.files.logs.verifier}

Your secrets, with a fresh token for spa-demo:

  curl -i ${urls.secret} -H 'Authorization: Bearer ${token}'

A new token any time:

  curl -s -d grant_type=client_credentials -d client_id=spa-demo -d scope=secrets:read ${urls.tokenEndpoint}
`);

  // Signals also reach the children through the teardown handlers; above we only say goodbye.
  await new Promise<never>(() => {});
}

void main();

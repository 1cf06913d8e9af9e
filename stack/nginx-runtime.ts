// NGINX for a local prefix run: the SG_ values (nginx/variables.ts), the templates rendered by
// nginx/bin/sg-render exactly as in the official image, and the command line that runs it in the
// foreground so the runner supervises the master process directly.
import { dirname } from 'node:path';
import { localNginxEnv, nginxPaths, renderNginxConfig, type NginxEnv } from './nginx/render.js';
import { assertServableSecrets } from './nginx/secrets-check.js';
import type { Nginx } from './prerequisites.js';

export interface NginxRuntimeOptions {
  readonly prefix: string;
  readonly nginx: Nginx;
  readonly listen: string;
  readonly verifierAddr: string;
  readonly issuer: string;
  readonly audience: string;
  /** The SPA's client id at the IdP (`clientId` in `/config.json`); the demo client when unset. */
  readonly clientId?: string | undefined;
  /** SG_OIDC_AUDIENCE_PARAMETERS: how the SPA names the API at sign-in. */
  readonly audienceParameters?: string | undefined;
  /** SG_SPA_SECRET_SETS: the named sets the SPA offers beside the default one. */
  readonly secretSets?: string | undefined;
  readonly secretsFile: string;
  /** SG_* overrides (e.g. a higher SG_SECRET_RATE for load tests). */
  readonly overrides: Readonly<Record<string, string>>;
  /** The study's flat secrets JSON, when NGINX gets one. */
  readonly secrets?: string | undefined;
}

export interface NginxRuntime {
  readonly prefix: string;
  readonly confFile: string;
  readonly env: NginxEnv & Record<string, string>;
  readonly args: readonly string[];
}

/** Computes the SG_ environment and renders the templates into the prefix directory. */
export async function prepareNginx(options: NginxRuntimeOptions): Promise<NginxRuntime> {
  const env = {
    ...localNginxEnv({
      prefix: options.prefix,
      listen: options.listen,
      verifierAddr: options.verifierAddr,
      secretsFile: options.secretsFile,
      oidcIssuer: options.issuer,
      oidcAudience: options.audience,
      ...(options.clientId === undefined ? {} : { oidcClientId: options.clientId }),
      ...(options.audienceParameters === undefined
        ? {}
        : { oidcAudienceParameters: options.audienceParameters }),
      ...(options.secretSets === undefined ? {} : { spaSecretSets: options.secretSets }),
      // One worker is plenty on loopback and keeps the process count low when suites run in parallel.
      workerProcesses: 1,
    }),
    ...options.overrides,
  };
  // Client ids are unique only per issuer: an ambiguous secrets file stops the start here.
  assertServableSecrets({ ...env, SECRETS: options.secrets });
  const { confPath } = await renderNginxConfig({
    templatesDir: nginxPaths.templatesDir,
    outDir: options.prefix,
    env,
    modulesDir: dirname(options.nginx.njsModule),
  });
  return {
    prefix: options.prefix,
    confFile: confPath,
    env,
    // `daemon off`: the templates leave it out because the official image passes it the same way.
    // `-e stderr`: errors before the config's own error_log is open reach the runner's log file.
    args: ['-p', options.prefix, '-c', confPath, '-e', 'stderr', '-g', 'daemon off;'],
  };
}

// NGINX on this host as the image runs it with a policy file: the set watcher names the sets from
// the policies and renders again (then reloads) when they change. Shared by the suites that change
// the files under it.
import path from 'node:path';
import { startLocalNginx, type LocalNginx } from '../../stack/nginx/local-nginx.js';
import { localNginxEnv, nginxPaths } from '../../stack/nginx/render.js';
import { freePort } from '../../stack/ports.js';

export interface NamedSetsNginx {
  /** A scratch directory of the suite's: NGINX's prefix and the sets' memory directory go in it. */
  readonly work: string;
  readonly verifierPort: number;
  readonly secretsFile: string;
  readonly policyFile: string;
  /** The issuer the secrets file's sets are keyed by. */
  readonly issuer: string;
}

export async function startNamedSetsNginx(options: NamedSetsNginx): Promise<LocalNginx> {
  const prefix = path.join(options.work, 'prefix');
  return startLocalNginx({
    prefix,
    env: localNginxEnv({
      prefix,
      listen: `127.0.0.1:${await freePort()}`,
      verifierAddr: `127.0.0.1:${options.verifierPort}`,
      secretsFile: options.secretsFile,
      secretsIssuer: options.issuer,
      policyFile: options.policyFile,
      memoryDir: path.join(options.work, 'memory'),
    }),
    // What the image's entrypoint exports: where the watcher renders again.
    processEnv: {
      NGINX_ENVSUBST_TEMPLATE_DIR: nginxPaths.templatesDir,
      NGINX_ENVSUBST_OUTPUT_DIR: prefix,
    },
  });
}

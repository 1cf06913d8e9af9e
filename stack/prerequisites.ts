// What must exist before the stack can start: the nginx binary with njs, the compiled verifier and
// the built SPA. Missing artefacts are built with the project's own npm scripts; missing system
// packages are named with the exact command that installs them.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const NJS_MODULE_PATHS = [
  '/usr/lib/nginx/modules/ngx_http_js_module.so',
  '/usr/lib64/nginx/modules/ngx_http_js_module.so',
  '/etc/nginx/modules/ngx_http_js_module.so',
];
const BUILD_LOCK = join(tmpdir(), 'secret-gate-build.lock');
const INSTALL_HINT = 'install it with: sudo apt-get install nginx libnginx-mod-http-js';

export interface Nginx {
  readonly binary: string;
  /** Absolute path of ngx_http_js_module.so. */
  readonly njsModule: string;
  readonly version: string;
}

/** Finds nginx and its njs module, or throws a message that says what to install. */
export async function findNginx(env: NodeJS.ProcessEnv = process.env): Promise<Nginx> {
  const candidates = [
    env.NGINX_BIN,
    '/usr/sbin/nginx',
    '/usr/local/sbin/nginx',
    '/usr/bin/nginx',
  ].filter((path): path is string => Boolean(path));
  const binary = candidates.find((path) => existsSync(path));
  if (!binary)
    throw new Error(`nginx was not found (looked at ${candidates.join(', ')}); ${INSTALL_HINT}`);
  const njsModule = [env.NGINX_NJS_MODULE, ...NJS_MODULE_PATHS].find(
    (path) => path && existsSync(path),
  );
  if (!njsModule) {
    throw new Error(`the NGINX njs module (ngx_http_js_module.so) was not found; ${INSTALL_HINT}`);
  }
  const { stderr } = await run(binary, ['-v']);
  return { binary, njsModule, version: stderr.trim().replace(/^nginx version: /, '') };
}

export interface Artefact {
  readonly name: string;
  /** File whose presence means the artefact is built. */
  readonly marker: string;
  /** npm script that builds it. */
  readonly script: string;
}

export function artefacts(root: string): Artefact[] {
  return [
    // The verifier loads the signer package's dist: a verifier built before it is not enough.
    {
      name: 'cloudfront-signer',
      marker: join(root, 'packages/cloudfront-signer/dist/index.js'),
      script: 'build:cloudfront-signer',
    },
    { name: 'verifier', marker: join(root, 'verifier/dist/main.js'), script: 'build:verifier' },
    { name: 'spa', marker: join(root, 'spa/dist/index.html'), script: 'build:spa' },
  ];
}

/**
 * Builds every missing artefact with `npm run <script>`, or (build = false) throws naming the
 * command to run. Serialised through a lock file so parallel suites do not build at once.
 */
export async function ensureArtefacts(
  root: string,
  options: { build: boolean; log: (line: string) => void },
): Promise<void> {
  for (const artefact of artefacts(root)) {
    if (existsSync(artefact.marker)) continue;
    if (!options.build) {
      throw new Error(
        `${artefact.name} is not built (${artefact.marker} is missing); run: npm run ${artefact.script}`,
      );
    }
    options.log(`building ${artefact.name}: npm run ${artefact.script}`);
    try {
      const npm = ['npm', 'run', '--silent', artefact.script];
      const [command, ...args] = existsSync('/usr/bin/flock')
        ? ['/usr/bin/flock', BUILD_LOCK, ...npm]
        : npm;
      await run(command as string, args, {
        cwd: root,
        maxBuffer: 16 * 1024 * 1024,
      });
    } catch (error) {
      const output = error as { stdout?: string; stderr?: string };
      throw new Error(
        `building ${artefact.name} failed (npm run ${artefact.script}):\n${output.stdout ?? ''}${output.stderr ?? ''}`,
        { cause: error },
      );
    }
    if (!existsSync(artefact.marker)) {
      throw new Error(`npm run ${artefact.script} did not produce ${artefact.marker}`);
    }
  }
}

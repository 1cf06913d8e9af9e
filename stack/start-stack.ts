// startStack(): the one runner behind `npm start`, the integration and browser suites and the
// stress and chaos harnesses. It writes the runtime files, starts the dev IdP, the verifier and
// NGINX as child processes on loopback, waits until each answers, and stops them all again.
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { assertWorkersCanReach, letWorkersRead } from './worker-access.js';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createIdpClient, type IdpClient, type TokenShape } from './idp-client.js';
import { nginxPaths } from './nginx/render.js';
import { prepareNginx } from './nginx-runtime.js';
import { freePort } from './ports.js';
import { artefacts, ensureArtefacts, findNginx } from './prerequisites.js';
import { createServiceProcess, waitForHttp, type ServiceProcess } from './service-process.js';
import {
  DEFAULT_PORTS,
  SERVICE_NAMES,
  VERIFIER_NODE_FLAGS,
  idpEnv,
  verifierConfig,
  verifierEnv,
  type ServiceName,
} from './service-env.js';
import { inheritedEnv, stackUrls, superviseStack } from './supervise.js';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export interface StackOptions {
  /** Ports per service; 0 (the default here) picks a free one. `npm start` passes 8080/8081/8090. */
  readonly ports?: Partial<Record<ServiceName, number>>;
  /** Directory for rendered config, runtime files and logs; a fresh temp dir when omitted. */
  readonly runtimeDir?: string;
  /** Secrets file NGINX serves from (`{ default, clients }`); the demo sets when omitted. */
  readonly secretsFile?: string;
  /** The flat `SECRETS` JSON of the study (docs/study.md); replaces the file when set. */
  readonly secrets?: string;
  /** `aud` the IdP puts in tokens and the verifier requires. */
  readonly audience?: string;
  /** Extra variables per service (e.g. `{ verifier: { VERIFIER_LOG_LEVEL: 'debug' } }`). */
  readonly env?: Partial<Record<ServiceName, Record<string, string>>>;
  /** Build missing `verifier/dist` and `spa/dist` (default true); false only reports them. */
  readonly build?: boolean;
  /** Progress lines (default: silent). */
  readonly log?: (line: string) => void;
  /** Milliseconds each service may take to become ready. */
  readonly readyTimeoutMs?: number;
}

export interface StackUrls {
  /** NGINX, the address a browser opens. */
  readonly gate: string;
  readonly hello: string;
  readonly secret: string;
  readonly config: string;
  readonly idp: string;
  readonly issuer: string;
  readonly tokenEndpoint: string;
  readonly verifier: string;
}

/** What a minted token should look like (see TokenShape in idp-client.ts). */
export type MintOptions = TokenShape;

export interface Stack {
  readonly urls: StackUrls;
  readonly ports: Readonly<Record<ServiceName, number>>;
  /** Variables each service was started with (only the ones the runner sets). */
  readonly env: Readonly<Record<ServiceName, Readonly<Record<string, string>>>>;
  readonly runtimeDir: string;
  readonly files: {
    readonly nginxConf: string;
    readonly nginxPrefix: string;
    readonly secrets: string;
    readonly verifierConfig: string;
    readonly logs: Readonly<Record<ServiceName, string>>;
  };
  /** The dev IdP's control API (key rotation, counters, outage). */
  readonly idp: IdpClient;
  /** A fresh access token from the real IdP (client-credentials grant unless claims are shaped). */
  mintToken(options?: MintOptions): Promise<string>;
  isRunning(name: ServiceName): boolean;
  /** Process id of a running service (its process group id too). */
  pid(name: ServiceName): number | undefined;
  /** Stops one service (SIGTERM, or SIGKILL to simulate a crash). */
  stopService(name: ServiceName, signal?: NodeJS.Signals): Promise<void>;
  /** Starts a stopped service again with the same ports and files, and waits until it is ready. */
  startService(name: ServiceName): Promise<void>;
  /** Stops everything; removes the runtime dir when the runner created it. Safe to call twice. */
  stop(): Promise<void>;
}

/** Starts the whole stack; on any failure stops what already started and rethrows. */
export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const log = options.log ?? (() => {});
  const nginxBinary = await findNginx();
  await ensureArtefacts(REPO_ROOT, { build: options.build ?? true, log });
  assertWorkersCanReach(artefacts(REPO_ROOT).map((artefact) => artefact.marker));

  const ownsDir = options.runtimeDir === undefined;
  const runtimeDir = options.runtimeDir
    ? resolve(options.runtimeDir)
    : mkdtempSync(join(tmpdir(), 'secret-gate-'));
  const logDir = join(runtimeDir, 'logs');
  mkdirSync(logDir, { recursive: true });
  const ports = await pickPorts(options.ports ?? {});
  const audience = options.audience ?? 'secret-gate-api';
  const issuer = `http://127.0.0.1:${ports.idp}`;
  const verifierAddr = `127.0.0.1:${ports.verifier}`;

  const secretsFile = join(runtimeDir, 'secrets.json');
  writeFileSync(secretsFile, readFileSync(options.secretsFile ?? nginxPaths.devSecretsFile), {
    mode: 0o600,
  });
  letWorkersRead(runtimeDir, secretsFile);
  const verifierConfigFile = join(runtimeDir, 'verifier.json');
  writeFileSync(
    verifierConfigFile,
    `${JSON.stringify(verifierConfig({ issuer, jwksUri: `${issuer}/jwks`, audience }), null, 2)}\n`,
  );

  const env: Record<ServiceName, Record<string, string>> = {
    idp: {
      ...idpEnv({ host: '127.0.0.1', port: ports.idp, issuer, audience }),
      ...options.env?.idp,
    },
    verifier: {
      ...verifierEnv({ listen: verifierAddr, configFile: verifierConfigFile }),
      ...options.env?.verifier,
    },
    nginx: {},
  };
  const nginx = await prepareNginx({
    prefix: join(runtimeDir, 'nginx'),
    nginx: nginxBinary,
    listen: `127.0.0.1:${ports.nginx}`,
    verifierAddr,
    issuer,
    audience,
    secretsFile,
    overrides: options.env?.nginx ?? {},
  });
  env.nginx = { ...nginx.env };
  if (options.secrets !== undefined) env.nginx.SECRETS = options.secrets;

  const gate = `http://127.0.0.1:${ports.nginx}`;
  const logs = {
    idp: join(logDir, 'idp.log'),
    verifier: join(logDir, 'verifier.log'),
    nginx: join(logDir, 'nginx.log'),
  };
  const baseEnv = inheritedEnv();
  const services: Record<ServiceName, ServiceProcess> = {
    idp: createServiceProcess({
      name: 'idp',
      command: process.execPath,
      args: ['--import', 'tsx', join(REPO_ROOT, 'idp/main.ts')],
      env: { ...baseEnv, ...env.idp },
      cwd: REPO_ROOT,
      logFile: logs.idp,
      ready: (signal) => waitForHttp(`${issuer}/readyz`, signal),
    }),
    verifier: createServiceProcess({
      name: 'verifier',
      command: process.execPath,
      args: [...VERIFIER_NODE_FLAGS, join(REPO_ROOT, 'verifier/dist/main.js')],
      env: { ...baseEnv, ...env.verifier },
      cwd: REPO_ROOT,
      logFile: logs.verifier,
      ready: (signal) => waitForHttp(`http://${verifierAddr}/readyz`, signal),
    }),
    nginx: createServiceProcess({
      name: 'nginx',
      command: nginxBinary.binary,
      args: nginx.args,
      env: { ...baseEnv, ...env.nginx },
      cwd: nginx.prefix,
      logFile: logs.nginx,
      ready: (signal) => waitForHttp(`${gate}/hello`, signal),
    }),
  };

  return superviseStack({
    urls: stackUrls(gate, issuer, `http://${verifierAddr}`),
    ports,
    env,
    runtimeDir,
    files: {
      nginxConf: nginx.confFile,
      nginxPrefix: nginx.prefix,
      secrets: secretsFile,
      verifierConfig: verifierConfigFile,
      logs,
    },
    idp: createIdpClient(issuer),
    services,
    readyTimeoutMs: options.readyTimeoutMs,
    log,
    cleanUp: () => {
      if (ownsDir) rmSync(runtimeDir, { recursive: true, force: true });
    },
  });
}

async function pickPorts(
  requested: Partial<Record<ServiceName, number>>,
): Promise<Record<ServiceName, number>> {
  const ports = { ...DEFAULT_PORTS };
  for (const name of SERVICE_NAMES) {
    const port = requested[name] ?? 0;
    ports[name] = port === 0 ? await freePort() : port;
  }
  return ports;
}

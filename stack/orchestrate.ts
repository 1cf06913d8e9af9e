// The one stack orchestrator behind startStack() (the dev run) and startProductionStack() (the
// production-shaped run): it lays out the runtime directory, writes the runtime files, prepares
// NGINX, describes the three processes and hands them to superviseStack(). What differs between
// the two runs is a StackShape: where files go and with which modes, how the verifier listens,
// and whom NGINX and the verifier run as.
import { receiverAddressWarning } from './receiver-address.js';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createIdpClient } from './idp-client.js';
import { nginxPaths, removeStaleMemoryDirs, renderNginxConfig } from './nginx/render.js';
import { verifierVerdict, watchPolicyFile } from './policy-reload.js';
import { configDigest } from '../verifier/src/reloader.js';
import { audienceParametersFor } from './nginx/variables.js';
import { prepareNginx, type NginxRuntime } from './nginx-runtime.js';
import {
  OWN_MEMORY_DIR_ENV,
  removeMemoryDir,
  withSecretSets,
} from './nginx/secret-sets-watcher.js';
import { mintedDemo } from './minted-demo.js';
import { freePort } from './ports.js';
import { artefacts, ensureArtefacts, findNginx } from './prerequisites.js';
import { createServiceProcess, waitForHttp, type ServiceProcess } from './service-process.js';
import {
  SECRET_POLICY,
  RESOURCE_METADATA_PATH,
  VERIFIER_NODE_FLAGS,
  VERIFIER_PROCESS_ENV,
  idpEnv,
  verifierEnv,
  type ServiceName,
} from './service-env.js';
import { REPO_ROOT, type Stack, type StackOptions } from './stack.js';
import { inheritedEnv, stackUrls, superviseStack } from './supervise.js';
import { assertWorkersCanReach } from './worker-access.js';
import { checkSetsMatch, checkVerifierConfig, type PolicyFacts } from './verifier-check.js';
import { runnerVerifierSettings } from './verifier-settings.js';

/** Where one run keeps its files. */
export interface StackLayout {
  readonly runtimeDir: string;
  readonly logDir: string;
  /** Secrets file and verifier configuration. */
  readonly configDir: string;
}

/** How the verifier listens, how NGINX reaches it, and how its readiness is probed. */
export interface VerifierListener {
  /** VERIFIER_LISTEN and SG_VERIFIER_ADDR. */
  readonly address: string;
  /** `http://host:port` or `unix:/path`, for the Stack's urls. */
  readonly url: string;
  ready(signal: AbortSignal): Promise<void>;
}

export interface StackShape {
  readonly tempPrefix: string;
  /** Creates the directories below `runtimeDir` (the directory itself exists). */
  layout(runtimeDir: string): StackLayout;
  /** The verifier's TCP port (0 when it listens on a unix socket), picked before anything starts. */
  verifierPort(requested: number | undefined): Promise<number>;
  listener(layout: StackLayout, port: number): VerifierListener;
  /**
   * Writes the secrets file, the verifier configuration and the edge key (the runner's and the
   * verifier's to read; NGINX's master reads it while the runner renders) with this run's modes
   * and owners.
   */
  writeFile(path: string, content: string | Buffer, kind: 'secrets' | 'config' | 'key'): void;
  readonly idpEnv: Readonly<Record<string, string>>;
  readonly nginxOverrides: Readonly<Record<string, string>>;
  /** Runs once NGINX's prefix is rendered, before anything starts (permissions). */
  secure(nginx: NginxRuntime, layout: StackLayout): void;
  /** The command line a service runs with (the production run drops privileges). */
  command(name: ServiceName, command: string, args: readonly string[]): [string, string[]];
  readonly label?: (name: ServiceName) => string;
  /** Runs before the runtime directory is removed. */
  release(): void;
}

/** Starts IdP, verifier and NGINX in `shape`; on any failure stops what already started. */
export async function orchestrate(options: StackOptions, shape: StackShape): Promise<Stack> {
  const log = options.log ?? (() => {});
  const nginxBinary = await findNginx();
  await ensureArtefacts(REPO_ROOT, { build: options.build ?? true, log });
  assertWorkersCanReach(artefacts(REPO_ROOT).map((artefact) => artefact.marker));

  const ownsDir = options.runtimeDir === undefined;
  const runtimeDir = options.runtimeDir
    ? resolve(options.runtimeDir)
    : mkdtempSync(join(tmpdir(), shape.tempPrefix));
  mkdirSync(runtimeDir, { recursive: true });
  const layout = shape.layout(runtimeDir);
  const ports = {
    nginx: options.ports?.nginx || (await freePort()),
    idp: options.ports?.idp || (await freePort()),
    verifier: await shape.verifierPort(options.ports?.verifier),
  };
  const own = options.ownIdp;
  const audience = own?.audience ?? options.audience ?? 'secret-gate-api';
  const issuer = own?.issuer ?? `http://127.0.0.1:${ports.idp}`;
  const verifier = shape.listener(layout, ports.verifier);

  const secretsFile = join(layout.configDir, 'secrets.json');
  const secretsSource = options.secretsFile ?? nginxPaths.devSecretsFile;
  const secretsText = readFileSync(secretsSource);
  shape.writeFile(secretsFile, secretsText, 'secrets');
  const verifierConfigFile = join(layout.configDir, 'verifier.json');
  // The minted demo's value (and its key file) is made once; a policy file reload keeps it.
  let demoMint: unknown;
  /** The verifier's settings from the policy file as it reads now (again on each change). */
  const mergeSettings = () => {
    const merged = runnerVerifierSettings({
      own,
      issuer,
      audience,
      variables: options.verifierVariables ?? {},
      policyFile: options.policyFile,
    });
    if (options.mintedDemo !== undefined && options.mintedDemo !== false && own === undefined) {
      const ttlSeconds = options.mintedDemo === true ? undefined : options.mintedDemo.ttlSeconds;
      const policies = (merged.document as { policies: Record<string, Record<string, unknown>> })
        .policies;
      const secret = policies[SECRET_POLICY];
      if (secret !== undefined)
        secret.mint = demoMint ??= mintedDemo(
          layout.configDir,
          (path, key) => shape.writeFile(path, key, 'key'),
          ttlSeconds,
        );
    }
    return merged;
  };
  const verifierText = (merged: { document: unknown }) =>
    `${JSON.stringify(merged.document, null, 2)}\n`;
  const settings = mergeSettings();
  const firstText = verifierText(settings);
  shape.writeFile(verifierConfigFile, firstText, 'config');
  // On TCP anyone on the host reaches the verifier: a key of this run proves a call is NGINX's.
  const edgeKeyFile = verifier.address.startsWith('unix:')
    ? undefined
    : join(layout.configDir, 'edge-key');
  if (edgeKeyFile !== undefined)
    shape.writeFile(edgeKeyFile, randomBytes(32).toString('hex'), 'key');

  const env: Record<ServiceName, Record<string, string>> = {
    idp: {
      ...idpEnv({
        host: '127.0.0.1',
        port: ports.idp,
        issuer,
        audience,
        logoutUri: `http://127.0.0.1:${ports.nginx}/backchannel-logout`,
      }),
      ...shape.idpEnv,
      ...options.env?.idp,
    },
    verifier: {
      ...VERIFIER_PROCESS_ENV,
      ...verifierEnv({ listen: verifier.address, configFile: verifierConfigFile, edgeKeyFile }),
      ...settings.env,
      ...options.env?.verifier,
    },
    nginx: {},
  };
  // The verifier's own check, before anything listens: every problem at once, one line each.
  const policySource = options.policyFile ?? options.verifierVariables?.VERIFIER_CONFIG;
  /**
   * The checks a start makes: the verifier's file (as written, or as `read` gives it) and the
   * secrets file's sets (as read at start, or `sets` read again for a reload).
   */
  const checkPolicies = (read?: (path: string) => string, sets = secretsText): PolicyFacts => {
    const facts = checkVerifierConfig(env.verifier, policySource, read);
    if (options.secrets === undefined)
      checkSetsMatch(
        secretsSource,
        parsedOrUndefined(sets.toString('utf8')),
        facts,
        policySource ?? "the run's policies",
        { sets: options.secretsFile !== undefined, policies: policySource !== undefined },
      );
    return facts;
  };
  const policies = checkPolicies();
  // What a run killed before its clean-up left in memory (tokens, secret sets) goes first.
  for (const dir of removeStaleMemoryDirs()) log(`removed ${dir}, left by a run that is gone`);
  const nginx = await prepareNginx({
    prefix: join(runtimeDir, 'nginx'),
    nginx: nginxBinary,
    listen: `127.0.0.1:${ports.nginx}`,
    verifierAddr: verifier.address,
    issuer,
    audience,
    clientId: own?.clientId,
    audienceParameters: own === undefined ? undefined : audienceParametersFor(own.preset),
    // The SPA offers every named set the policies serve (the dev IdP's step-up `payments`, so a
    // new user sees step-up at work, or the policy file's).
    secretSets: policies.setNames.join(' '),
    secretsFile,
    overrides: {
      ...shape.nginxOverrides,
      // RFC 9728: the metadata says DPoP-bound tokens are required when every policy requires them.
      SG_DPOP_BOUND_TOKENS_REQUIRED: String(policies.dpopRequired),
      ...(edgeKeyFile === undefined ? {} : { SG_EDGE_KEY_FILE: edgeKeyFile }),
      ...options.env?.nginx,
    },
    secrets: options.secrets,
  });
  env.nginx = { ...nginx.env, ...OWN_MEMORY_DIR_ENV };
  const addressWarning = receiverAddressWarning({
    receivers: policies.receivers,
    devIdp: own === undefined,
    realIpFrom: env.nginx.SG_REAL_IP_FROM,
  });
  if (addressWarning !== undefined) log(`warning: ${addressWarning}`);
  // Every challenge names the metadata NGINX serves (RFC 9728 §5.1), unless the operator named one.
  env.verifier.VERIFIER_RESOURCE_METADATA_URL ??= `${nginx.env.SG_EXTERNAL_ORIGIN}${RESOURCE_METADATA_PATH}`;
  if (options.secrets !== undefined) env.nginx.SECRETS = options.secrets;
  shape.secure(nginx, layout);

  const gate = `http://127.0.0.1:${ports.nginx}`;
  const logs = {
    idp: join(layout.logDir, 'idp.log'),
    verifier: join(layout.logDir, 'verifier.log'),
    nginx: join(layout.logDir, 'nginx.log'),
  };
  const baseEnv = inheritedEnv();
  const service = (
    name: ServiceName,
    [command, args]: [string, string[]],
    cwd: string,
    ready: (signal: AbortSignal) => Promise<void>,
  ): ServiceProcess =>
    createServiceProcess({
      name,
      command,
      args,
      env: { ...baseEnv, ...env[name] },
      cwd,
      logFile: logs[name],
      ready,
    });
  const services: Record<ServiceName, ServiceProcess | undefined> = {
    // The dev IdP stands in for the organisation's IdP: it is not part of what gets deployed, and
    // not started at all when the stack runs against an own IdP.
    idp:
      own === undefined
        ? service(
            'idp',
            [process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'idp/main.ts')]],
            REPO_ROOT,
            (signal) => waitForHttp(`${issuer}/readyz`, signal),
          )
        : undefined,
    verifier: service(
      'verifier',
      shape.command('verifier', process.execPath, [
        ...VERIFIER_NODE_FLAGS,
        join(REPO_ROOT, 'verifier/dist/main.js'),
      ]),
      REPO_ROOT,
      (signal) => verifier.ready(signal),
    ),
    nginx: service(
      'nginx',
      // NGINX under the secret-set watcher, which keeps the /secret sets in step with the file.
      shape.command('nginx', ...withSecretSets(nginxBinary.binary, nginx.args)),
      nginx.prefix,
      (signal) => waitForHttp(`${gate}/hello`, signal),
    ),
  };

  // Set once the services run; stopped with them.
  let policyWatch: ReturnType<typeof watchPolicyFile> | undefined = undefined;
  const stack = await superviseStack({
    urls: stackUrls(gate, issuer, verifier.url),
    ports,
    env,
    runtimeDir,
    audience,
    files: {
      nginxConf: nginx.confFile,
      nginxPrefix: nginx.prefix,
      secrets: secretsFile,
      verifierConfig: verifierConfigFile,
      logs,
    },
    idp: createIdpClient(issuer),
    ownIdp: own !== undefined,
    services,
    readyTimeoutMs: options.readyTimeoutMs,
    log,
    ...(shape.label ? { label: shape.label } : {}),
    cleanUp: () => {
      policyWatch?.stop();
      // The edge cache and the per-set secret files live outside the prefix, in memory.
      removeMemoryDir(nginx.env.SG_MEMORY_DIR);
      if (!ownsDir) return;
      shape.release();
      rmSync(runtimeDir, { recursive: true, force: true });
    },
  });
  if (policySource === undefined) return stack;

  // The policy file is followed while the run lives (policy-reload.ts); a production run's
  // configuration directories are read-only except while the runner writes them.
  const unlocked = <T>(write: () => T): T => {
    shape.release();
    try {
      return write();
    } finally {
      shape.secure(nginx, layout);
    }
  };
  let setsNow: typeof secretsText | undefined;
  let setsServed = secretsText;
  policyWatch = watchPolicyFile({
    path: policySource,
    facts: policies,
    published: firstText,
    log,
    merge: () => verifierText(mergeSettings()),
    check(text) {
      // The sets move with the policies: the operator's secrets file is read again, and copied
      // for the secret-set watcher with the verifier's file (change it first, the policies last).
      setsNow = readFileSync(secretsSource);
      return checkPolicies(
        (path) => (path === verifierConfigFile ? text : readFileSync(path, 'utf8')),
        setsNow,
      );
    },
    async publish(text, signal) {
      const since = statSync(logs.verifier).size;
      const sets = setsNow;
      unlocked(() => {
        if (sets !== undefined && !sets.equals(setsServed)) {
          shape.writeFile(`${secretsFile}.next`, sets, 'secrets');
          renameSync(`${secretsFile}.next`, secretsFile);
          setsServed = sets;
        }
        shape.writeFile(`${verifierConfigFile}.next`, text, 'config');
        renameSync(`${verifierConfigFile}.next`, verifierConfigFile);
      });
      return verifierVerdict(logs.verifier, since, configDigest(text), signal);
    },
    async reloadNginx(facts) {
      shape.release();
      try {
        await renderNginxConfig({
          templatesDir: nginxPaths.templatesDir,
          outDir: nginx.prefix,
          env: {
            ...nginx.env,
            SG_SPA_SECRET_SETS: facts.setNames.join(' '),
            SG_DPOP_BOUND_TOKENS_REQUIRED: String(facts.dpopRequired),
          },
          modulesDir: dirname(nginxBinary.njsModule),
        });
      } finally {
        shape.secure(nginx, layout);
      }
      // Graceful: old workers finish their requests, new ones read the new names.
      const args = ['-p', nginx.prefix, '-c', nginx.confFile, '-s', 'reload'];
      const reload = spawnSync(nginxBinary.binary, args, { encoding: 'utf8' });
      if (reload.status !== 0) throw new Error(`nginx -s reload failed: ${reload.stderr.trim()}`);
    },
  });
  return stack;
}

/** A secrets file's JSON; one NGINX cannot read is refused by its own start-time check. */
function parsedOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

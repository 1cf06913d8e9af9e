// The three images started as containers on their own network (GenericContainer), hardened as
// docker-compose.yaml runs them, and the gate table's view of them. Host ports are fixed free
// ports so a restarted container keeps its address. Everything the stack creates carries one
// label, and stop() removes whatever carries it, so a failed start leaves nothing behind.
import { chmodSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GenericContainer, Wait, type StartedTestContainer } from 'testcontainers';
import { dockerNginxEnv } from '../../stack/nginx/render.js';
import { createIdpClient } from '../../stack/idp-client.js';
import { freePort } from '../../stack/ports.js';
import { waitForHttp } from '../../stack/service-process.js';
import { verifierConfig, type ServiceName } from '../../stack/service-env.js';
import type { GateTarget } from '../support/gate-table.js';
import { demoSecrets, type SecretsFile } from '../support/secrets.js';
import { IMAGES, docker } from './engine.js';

const SUITE_LABEL = 'org.secret-gate.suite';
const ISSUER = 'http://idp:8081';
const AUDIENCE = 'secret-gate-api';
const CONTAINER_PORTS: Record<ServiceName, number> = { idp: 8081, verifier: 8090, nginx: 8080 };

/** As docker-compose.yaml's x-hardened: read-only root, no capabilities, no privilege gain. */
class HardenedContainer extends GenericContainer {
  constructor(image: string, options: { init: boolean }) {
    super(image);
    this.hostConfig.ReadonlyRootfs = true;
    this.hostConfig.Init = options.init;
    this.hostConfig.CapDrop = ['ALL'];
    this.hostConfig.SecurityOpt = ['no-new-privileges:true'];
  }
}

export interface ContainerStack {
  readonly target: GateTarget;
  readonly urls: Readonly<Record<ServiceName, string>>;
  readonly containers: Readonly<Record<ServiceName, StartedTestContainer>>;
  stop(): Promise<void>;
}

/** Removes every container and network carrying this suite's label (even half-created ones). */
async function removeLabelled(suite: string): Promise<void> {
  const filter = `label=${SUITE_LABEL}=${suite}`;
  const containers = (await docker('ps', '-aq', '--filter', filter)).split('\n').filter(Boolean);
  if (containers.length > 0) await docker('rm', '-f', '-v', ...containers);
  const networks = (await docker('network', 'ls', '-q', '--filter', filter))
    .split('\n')
    .filter(Boolean);
  if (networks.length > 0) await docker('network', 'rm', ...networks);
}

export async function startContainerStack(
  nginxEnv: Readonly<Record<string, string>> = {},
): Promise<ContainerStack> {
  const suite = `s${process.pid}-${Date.now().toString(36)}`;
  const labels = { [SUITE_LABEL]: suite };
  // The secrets live in a mounted directory, so a rename there reaches NGINX (a file mount
  // would keep the old inode). World-readable: NGINX runs as uid 101.
  const files = mkdtempSync(join(tmpdir(), 'sg-containers-'));
  chmodSync(files, 0o755);
  const writeSecrets = (secrets: SecretsFile) => {
    writeFileSync(join(files, 'secrets.next'), `${JSON.stringify(secrets, null, 2)}\n`, {
      mode: 0o644,
    });
    renameSync(join(files, 'secrets.next'), join(files, 'secrets.json'));
  };
  writeSecrets(demoSecrets);
  writeFileSync(
    join(files, 'verifier.json'),
    JSON.stringify(
      verifierConfig({
        issuer: ISSUER,
        jwksUri: `${ISSUER}/jwks`,
        audience: AUDIENCE,
        // The IdP container is reached by name over plain http on the suite's own network.
        allowHttp: true,
      }),
    ),
    { mode: 0o644 },
  );

  const ports = {
    idp: await freePort(),
    verifier: await freePort(),
    nginx: await freePort(),
  } as Record<ServiceName, number>;
  const urls = {
    idp: `http://127.0.0.1:${ports.idp}`,
    verifier: `http://127.0.0.1:${ports.verifier}`,
    nginx: `http://127.0.0.1:${ports.nginx}`,
  };
  const readiness: Record<ServiceName, string> = {
    idp: `${urls.idp}/readyz`,
    verifier: `${urls.verifier}/readyz`,
    nginx: `${urls.nginx}/hello`,
  };
  const network = `sg-${suite}`;
  const stop = async () => {
    await removeLabelled(suite);
    rmSync(files, { recursive: true, force: true });
  };

  try {
    await docker('network', 'create', '--label', `${SUITE_LABEL}=${suite}`, network);
    const start = (name: ServiceName, container: GenericContainer) =>
      container
        .withLabels(labels)
        .withNetworkMode(network)
        .withNetworkAliases(name)
        .withExposedPorts({ container: CONTAINER_PORTS[name], host: ports[name] })
        .withWaitStrategy(
          Wait.forHttp(name === 'nginx' ? '/hello' : '/readyz', CONTAINER_PORTS[name]),
        )
        .withStartupTimeout(60_000)
        .start();
    const idp = await start(
      'idp',
      new HardenedContainer(IMAGES.idp, { init: true }).withEnvironment({
        IDP_ISSUER: ISSUER,
        IDP_AUDIENCE: AUDIENCE,
        IDP_CLIENTS: 'spa-demo,partner-app',
        IDP_DEV_CONTROL: 'on',
      }),
    );
    const verifier = await start(
      'verifier',
      new HardenedContainer(IMAGES.verifier, { init: true })
        .withEnvironment({
          VERIFIER_LISTEN: '0.0.0.0:8090',
          VERIFIER_CONFIG: '/etc/secret-gate/files/verifier.json',
          VERIFIER_JWKS_COOLDOWN: '1s',
        })
        .withBindMounts([{ source: files, target: '/etc/secret-gate/files', mode: 'ro' }]),
    );
    const nginx = await start(
      'nginx',
      new HardenedContainer(IMAGES.nginx, { init: false })
        .withTmpFs({ '/tmp': 'rw,size=16m' })
        .withEnvironment({
          ...dockerNginxEnv(),
          SG_VERIFIER_ADDR: 'verifier:8090',
          SG_SECRETS_FILE: '/etc/secret-gate/files/secrets.json',
          // The verifier's own file, whose policies other than `secret` are NGINX's named sets.
          SG_POLICY_FILE: '/etc/secret-gate/files/verifier.json',
          SG_OIDC_ISSUER: ISSUER,
          SG_CSP_CONNECT_SRC: ISSUER,
          SG_SECRETS_ISSUER: ISSUER,
          SG_SECRET_RATE: '200r/s',
          SG_SECRET_BURST: '400',
          ...nginxEnv,
        })
        .withBindMounts([{ source: files, target: '/etc/secret-gate/files', mode: 'ro' }]),
    );
    const containers = { idp, verifier, nginx };
    const idpClient = createIdpClient(urls.idp);

    const target: GateTarget = {
      urls: { hello: `${urls.nginx}/hello`, secret: `${urls.nginx}/secret`, issuer: ISSUER },
      audience: AUDIENCE,
      mintToken: (options) => idpClient.mintToken(options),
      rotateKey: async () => {
        await idpClient.rotateKey();
      },
      async stopService(name, signal) {
        const id = containers[name].getId();
        if (signal === 'SIGKILL') await docker('kill', id);
        else await docker('stop', '-t', '5', id);
      },
      async startService(name) {
        await docker('start', containers[name].getId());
        await waitForHttp(readiness[name], AbortSignal.timeout(60_000));
      },
      writeSecrets(secrets) {
        writeSecrets(secrets);
        return Promise.resolve();
      },
      async reloadGate() {
        await docker('kill', '--signal', 'HUP', nginx.getId());
      },
    };
    return { target, urls, containers, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

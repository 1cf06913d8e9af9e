// The same gate table against `docker compose up` (docker-compose.yaml through testcontainers'
// DockerComposeEnvironment). Where no container runtime answers, the suite is skipped and says why;
// the identical table then runs against local processes in gate.test.ts.
import { join } from 'node:path';
import {
  DockerComposeEnvironment,
  getContainerRuntimeClient,
  Wait,
  type StartedDockerComposeEnvironment,
} from 'testcontainers';
import { afterAll, beforeAll, describe } from 'vitest';
import { createIdpClient } from '../../stack/idp-client.js';
import { ensureArtefacts } from '../../stack/prerequisites.js';
import { waitForHttp } from '../../stack/service-process.js';
import { REPO_ROOT } from '../../stack/start-stack.js';
import { DEFAULT_PORTS, type ServiceName } from '../../stack/service-env.js';
import { defineGateTable, type GateTarget } from '../support/gate-table.js';

const noRuntime = await getContainerRuntimeClient().then(
  () => undefined,
  (error: unknown) => (error as Error).message,
);
if (noRuntime) console.warn(`compose suite skipped: no container runtime (${noRuntime})`);

const gate = `http://localhost:${DEFAULT_PORTS.nginx}`;
const issuer = `http://localhost:${DEFAULT_PORTS.idp}`;
const readiness: Record<ServiceName, string> = {
  idp: `${issuer}/readyz`,
  verifier: `http://localhost:${DEFAULT_PORTS.verifier}/readyz`,
  nginx: `${gate}/hello`,
};

let environment: StartedDockerComposeEnvironment | undefined;

async function containerOf(name: ServiceName) {
  const client = await getContainerRuntimeClient();
  const id = environment?.getContainer(`${name}-1`).getId() ?? '';
  return client.container.getById(id);
}

const target: GateTarget = {
  urls: { hello: `${gate}/hello`, secret: `${gate}/secret`, issuer },
  audience: 'secret-gate-api',
  mintToken: (options) => createIdpClient(issuer).mintToken(options),
  rotateKey: async () => {
    await createIdpClient(issuer).rotateKey();
  },
  async stopService(name, signal) {
    const container = await containerOf(name);
    if (signal === 'SIGKILL') await container.kill();
    else await container.stop({ t: 5 });
  },
  async startService(name) {
    await (await containerOf(name)).start();
    await waitForHttp(readiness[name], AbortSignal.timeout(60_000));
  },
};

describe.skipIf(noRuntime !== undefined)(
  `secret-gate on docker compose${noRuntime ? ` (skipped: no container runtime: ${noRuntime})` : ''}`,
  () => {
    beforeAll(async () => {
      // The nginx service mounts spa/dist, so the SPA must be built before compose starts.
      await ensureArtefacts(REPO_ROOT, { build: true, log: () => {} });
      environment = await new DockerComposeEnvironment(join(REPO_ROOT), 'docker-compose.yaml')
        .withBuild()
        .withWaitStrategy('idp-1', Wait.forHealthCheck())
        .withWaitStrategy('verifier-1', Wait.forHealthCheck())
        .withWaitStrategy('nginx-1', Wait.forHealthCheck())
        .up();
    }, 600_000);
    afterAll(async () => {
      await environment?.down({ removeVolumes: true });
    }, 120_000);

    describe.sequential('the gate table', () => {
      defineGateTable(() => target);
    });
  },
);

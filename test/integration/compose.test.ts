// The same gate table against `docker compose up` (docker-compose.yaml through testcontainers'
// DockerComposeEnvironment, plus test/containers/compose-suite.yaml for the rotation rows), on free
// host ports. Skipped, and saying why, only where no container engine answers; the identical table
// runs against local processes in gate.test.ts and against the images in test/containers/.
import { chmodSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DockerComposeEnvironment,
  Wait,
  type StartedDockerComposeEnvironment,
} from 'testcontainers';
import { afterAll, beforeAll, describe } from 'vitest';
import { createIdpClient } from '../../stack/idp-client.js';
import { MINTED_DEMO_VALUES } from '../../stack/minted-demo.js';
import { freePort } from '../../stack/ports.js';
import { waitForHttp } from '../../stack/service-process.js';
import { REPO_ROOT } from '../../stack/start-stack.js';
import type { ServiceName } from '../../stack/service-env.js';
import { IMAGE_TAG, docker, missingEngine } from '../containers/engine.js';
import { defineGateTable, type GateTarget } from '../support/gate-table.js';
import { demoSecrets, type SecretsFile } from '../support/secrets.js';

const noEngine = await missingEngine();
if (noEngine) console.warn(`compose suite skipped: no container engine (${noEngine})`);

const project = `sg-compose-${process.pid}`;
let environment: StartedDockerComposeEnvironment | undefined;
let files = '';
let target: GateTarget | undefined;

function writeSecrets(secrets: SecretsFile): void {
  writeFileSync(join(files, 'secrets.next'), `${JSON.stringify(secrets, null, 2)}\n`, {
    mode: 0o644,
  });
  renameSync(join(files, 'secrets.next'), join(files, 'secrets.json'));
}

/** The verifier publishes no port: its readiness is asked inside it, with the image's probe. */
async function verifierReady(id: string, signal: AbortSignal): Promise<void> {
  for (;;) {
    const ready = await docker('exec', id, 'node', 'verifier/dist/probe.js', '/readyz').then(
      () => true,
      () => false,
    );
    if (ready) return;
    signal.throwIfAborted();
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

async function createTarget(ports: Record<'idp' | 'nginx', number>): Promise<GateTarget> {
  const gate = `http://127.0.0.1:${ports.nginx}`;
  const idp = createIdpClient(`http://127.0.0.1:${ports.idp}`);
  const idOf = (name: ServiceName) => environment?.getContainer(`${name}-1`).getId() ?? '';
  const readiness: Record<ServiceName, (signal: AbortSignal) => Promise<void>> = {
    idp: (signal) => waitForHttp(`http://127.0.0.1:${ports.idp}/readyz`, signal),
    verifier: (signal) => verifierReady(idOf('verifier'), signal),
    nginx: (signal) => waitForHttp(`${gate}/hello`, signal),
  };
  return {
    // The issuer tokens carry: the compose file's, whatever port the host reaches the IdP on.
    urls: { hello: `${gate}/hello`, secret: `${gate}/secret`, issuer: 'http://localhost:8081' },
    audience: 'secret-gate-api',
    // The `secret` set's per-user values, as `npm start` serves them (stack/minted-demo.ts).
    mintedValues: MINTED_DEMO_VALUES,
    mintToken: (options) => idp.mintToken(options),
    rotateKey: async () => {
      await idp.rotateKey();
    },
    async stopService(name, signal) {
      if (signal === 'SIGKILL') await docker('kill', idOf(name));
      else await docker('stop', '-t', '5', idOf(name));
    },
    async startService(name) {
      await docker('start', idOf(name));
      await readiness[name](AbortSignal.timeout(60_000));
    },
    writeSecrets(secrets) {
      writeSecrets(secrets);
      return Promise.resolve();
    },
    async reloadGate() {
      await docker('kill', '--signal', 'HUP', idOf('nginx'));
    },
  };
}

describe.skipIf(noEngine !== undefined)(
  `secret-gate on docker compose${noEngine ? ` (skipped: no container engine: ${noEngine})` : ''}`,
  () => {
    beforeAll(async () => {
      files = mkdtempSync(join(tmpdir(), 'sg-compose-'));
      chmodSync(files, 0o755);
      writeSecrets(demoSecrets);
      const ports = { idp: await freePort(), nginx: await freePort() };
      environment = await new DockerComposeEnvironment(REPO_ROOT, [
        'docker-compose.yaml',
        'test/containers/compose-suite.yaml',
      ])
        .withProjectName(project)
        .withEnvironment({
          SECRET_GATE_PORT: String(ports.nginx),
          SECRET_GATE_IDP_PORT: String(ports.idp),
          SECRET_GATE_TEST_FILES: files,
          SECRET_GATE_TAG: IMAGE_TAG,
        })
        .withBuild()
        .withWaitStrategy('idp-1', Wait.forHealthCheck())
        .withWaitStrategy('verifier-1', Wait.forHealthCheck())
        .withWaitStrategy('nginx-1', Wait.forHealthCheck())
        .withStartupTimeout(120_000)
        .up();
      target = await createTarget(ports);
    }, 600_000);

    afterAll(async () => {
      // By project name, so a start that failed half-way is removed too.
      await docker('compose', '-p', project, 'down', '-v', '--remove-orphans', '-t', '5').catch(
        (error: unknown) => console.warn(`compose down: ${(error as Error).message}`),
      );
      if (files) rmSync(files, { recursive: true, force: true });
    }, 120_000);

    describe.sequential('the gate table', () => {
      defineGateTable(() => {
        if (!target) throw new Error('docker compose did not start');
        return target;
      });
    });
  },
);

// The gate table of the process-based suite (test/integration/gate.test.ts), run against the built
// images as containers: one table, two targets. Skipped, and saying why, only where no container
// engine answers; .ci/run makes one (test/containers/setup.sh), so in CI it always runs.
import { afterAll, beforeAll, describe } from 'vitest';
import { defineGateTable } from '../support/gate-table.js';
import { startContainerStack, type ContainerStack } from './container-stack.js';
import { buildImages, missingEngine } from './engine.js';

const noEngine = await missingEngine();
if (noEngine) console.warn(`container suite skipped: no container engine (${noEngine})`);

let stack: ContainerStack | undefined;

describe.skipIf(noEngine !== undefined)(
  `secret-gate on its images${noEngine ? ` (skipped: no container engine: ${noEngine})` : ''}`,
  () => {
    beforeAll(async () => {
      await buildImages();
      stack = await startContainerStack();
    }, 600_000);
    afterAll(async () => {
      await stack?.stop();
    }, 60_000);

    describe.sequential('the gate table', () => {
      defineGateTable(() => {
        if (!stack) throw new Error('the container stack did not start');
        return stack.target;
      });
    });
  },
);

// The gate as a user meets it: real NGINX, the real verifier and the dev IdP started by the same
// runner as `npm start`, driven over HTTP through the assertion table of issue 3.
import { afterAll, beforeAll, describe } from 'vitest';
import type { Stack } from '../../stack/start-stack.js';
import { defineGateTable } from '../support/gate-table.js';
import { localTarget, startSuiteStack } from '../support/local-target.js';

let stack: Stack;

beforeAll(async () => {
  stack = await startSuiteStack();
}, 180_000);
afterAll(() => stack?.stop());

describe.sequential('secret-gate on local processes', () => {
  defineGateTable(() => localTarget(stack));
});

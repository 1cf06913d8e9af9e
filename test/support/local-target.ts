// The gate table's view of a stack started by startStack() (the same runner as `npm start`).
import { renameSync, writeFileSync } from 'node:fs';
import { startStack, type Stack, type StackOptions } from '../../stack/start-stack.js';
import type { GateTarget } from './gate-table.js';

/** Options every integration suite uses: free ports, and a JWKS cooldown short enough for rotation rows. */
export const SUITE_OPTIONS: StackOptions = {
  env: {
    verifier: { VERIFIER_JWKS_COOLDOWN: '1s' },
    nginx: { SG_SECRET_RATE: '200r/s', SG_SECRET_BURST: '400' },
  },
};

export async function startSuiteStack(options: StackOptions = {}): Promise<Stack> {
  return startStack({ ...SUITE_OPTIONS, ...options });
}

export function localTarget(stack: Stack): GateTarget {
  return {
    urls: stack.urls,
    audience: 'secret-gate-api',
    mintToken: (options) => stack.mintToken(options),
    rotateKey: async () => {
      await stack.idp.rotateKey();
    },
    stopService: (name, signal) => stack.stopService(name, signal),
    startService: (name) => stack.startService(name),
    writeSecrets(secrets) {
      const next = `${stack.files.secrets}.next`;
      writeFileSync(next, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o644 });
      renameSync(next, stack.files.secrets);
      return Promise.resolve();
    },
    reloadGate() {
      const pid = stack.pid('nginx');
      if (pid === undefined) return Promise.reject(new Error('NGINX is not running'));
      process.kill(pid, 'SIGHUP');
      return Promise.resolve();
    },
  };
}

// The verifier's configuration checked by the runner before anything starts: the verifier's own
// loader (verifier/src/config/load.ts) over the document the run wrote, so a bad policy file or
// variable stops `npm start` with one line per problem (exit 2) while nothing listens yet, and
// each former name in use is said once.
import { ConfigError, loadConfig } from '../verifier/src/config/load.js';
import { SettingsError } from './verifier-settings.js';

/**
 * Throws a SettingsError listing every problem of the verifier's configuration under `env`; a
 * problem in the file the run wrote is named by its place in the operator's `policyFile` when
 * there is one. Deprecation lines go to `log`.
 */
export function checkVerifierConfig(
  env: Readonly<Record<string, string>>,
  policyFile: string | undefined,
  log: (line: string) => void,
  read?: (path: string) => string,
): void {
  try {
    loadConfig(env, read, (line) => log(`verifier: ${line}`));
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const source = policyFile ?? 'the verifier configuration of this run';
    throw new SettingsError(
      error.problems.map((problem) =>
        problem.startsWith('config.') ? `${source}: ${problem.slice('config.'.length)}` : problem,
      ),
    );
  }
}

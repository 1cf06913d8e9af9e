// Reads the configuration once, at start, into a frozen VerifierConfig: the environment becomes a
// document (config-env.ts), the one validator checks it (config-validate.ts), then the files it
// names are read through the one reader. Every problem is collected and reported in one ConfigError.
import { readFileSync } from 'node:fs';
import type { FileReader, Problems } from './config-kinds.js';
import { CONFIG_FILE_VARIABLE, documentFromEnv } from './config-env.js';
import type { VerifierConfig } from './config-model.js';
import { validateDocument, type Naming } from './config-validate.js';

export { ENV_DEFAULTS, ENVIRONMENT } from './config-env.js';
export type { FileReader } from './config-kinds.js';

/** Thrown at start when the configuration is unusable; the message lists every problem. */
export class ConfigError extends TypeError {
  override readonly name = 'ConfigError';
  constructor(readonly problems: readonly string[]) {
    super(`invalid verifier configuration:\n  - ${problems.join('\n  - ')}`);
  }
}

/**
 * Builds the configuration from the environment. Single-issuer mode (VERIFIER_ISSUER) defines one
 * JWT issuer and one policy named `default`; file mode (VERIFIER_CONFIG) defines issuers and
 * named policies in JSON. The two are exclusive so no setting is silently ignored.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv,
  readFile: FileReader = (path) => readFileSync(path, 'utf8'),
): VerifierConfig {
  const problems: Problems = [];
  let fileFailed = false;
  const readDocument = (path: string): Record<string, unknown> | undefined => {
    const problem = (message: string) => {
      fileFailed = true;
      problems.push(`${CONFIG_FILE_VARIABLE}: ${message}`);
      return undefined;
    };
    let text: string;
    try {
      text = readFile(path);
    } catch (error) {
      return problem(`cannot read "${path}" (${(error as Error).message})`);
    }
    let root: unknown;
    try {
      root = JSON.parse(text);
    } catch (error) {
      return problem(`not valid JSON (${(error as Error).message})`);
    }
    if (typeof root !== 'object' || root === null || Array.isArray(root))
      return problem('the file must hold a JSON object');
    return root as Record<string, unknown>;
  };
  const source = documentFromEnv(env, readDocument, problems);

  const naming: Naming = {
    label: (path) =>
      source.labels.get(path) ??
      (source.file === undefined ? path : path === '' ? 'config' : `config.${path}`),
    missing(path, phrase) {
      if (fileFailed && (path === 'issuers' || path === 'policies')) return undefined;
      if (source.file === undefined && !source.singleIssuer) {
        if (path === 'policies') return undefined;
        if (path === 'issuers')
          return `VERIFIER_ISSUER or ${CONFIG_FILE_VARIABLE}: one of them is required`;
      }
      const label = naming.label(path);
      return source.singleIssuer && label.startsWith('VERIFIER_')
        ? `${label}: required with VERIFIER_ISSUER`
        : `${label}: ${phrase}`;
    },
  };
  const validated = validateDocument(source.document, naming, problems);
  validated.load(readFile, problems, env);
  // The single-issuer policy is validated under two names; say each problem once.
  if (problems.length > 0) throw new ConfigError([...new Set(problems)]);
  return deepFreeze(validated.config);
}

/** Freezes plain objects, arrays and Maps; leaves class instances (a loaded key) alone. */
function deepFreeze<T>(value: T): T {
  if (value instanceof Map) {
    for (const item of value.values()) deepFreeze(item);
    // A frozen Map still has set(): hide the mutators so the object really is read-only.
    for (const method of ['set', 'delete', 'clear'] as const) {
      Object.defineProperty(value, method, {
        value: () => {
          throw new TypeError('configuration is read-only');
        },
      });
    }
    return Object.freeze(value);
  }
  if (Array.isArray(value) || isPlainObject(value)) {
    for (const item of Object.values(value as object)) deepFreeze(item);
    return Object.freeze(value);
  }
  return value;
}

function isPlainObject(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

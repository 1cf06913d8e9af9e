// VERIFIER_* variables as a configuration document: each variable is the flat spelling of one
// setting of config-model.ts (the flags-to-options conversion oauth2-proxy does). The single-issuer
// variables (VERIFIER_ISSUER, …) spell one issuer (JWT unless its preset says otherwise) and one
// policy, named `secret` (what NGINX's /secret asks for) and answered as `default` too.
import type { Kind, Problems, SettingReference } from './config-kinds.js';
import {
  DEFAULT_POLICY,
  ENV_POLICY,
  jwtIssuerSettings,
  policySettings,
  rootSettings,
  tokeninfoIssuerSettings,
  type Setting,
  type Table,
} from './config-model.js';

/** Names the JSON file; exclusive with the single-issuer variables. */
export const CONFIG_FILE_VARIABLE = 'VERIFIER_CONFIG';

export interface EnvDocument {
  readonly document: Record<string, unknown>;
  /** Document path → the variable it came from, so problems name what the operator set. */
  readonly labels: ReadonlyMap<string, string>;
  /** Path of the JSON file when VERIFIER_CONFIG is set. */
  readonly file: string | undefined;
  /** True in single-issuer mode (the document's issuer and policy come from variables). */
  readonly singleIssuer: boolean;
}

/** Reads the JSON file into a document; undefined (and a problem) when it cannot. */
export type DocumentReader = (path: string) => Record<string, unknown> | undefined;

interface Variable {
  readonly name: string;
  readonly path: string;
  readonly setting: Setting<unknown>;
}

function variablesOf(table: Table, prefix: string): Variable[] {
  return Object.entries(table).flatMap(([name, entry]): Variable[] => {
    const path = `${prefix}${name}`;
    if (!('kind' in entry)) return variablesOf(entry, `${path}.`);
    const setting = entry as Setting<unknown>;
    return setting.env === undefined ? [] : [{ name: setting.env, path, setting }];
  });
}

const ISSUER_PATH = 'issuers[0]';
const POLICY_PATH = `policies.${ENV_POLICY}`;
const ALIAS_PATH = `policies.${DEFAULT_POLICY}`;
const rootVariables = variablesOf(rootSettings, '');
const jwtVariables = variablesOf(jwtIssuerSettings, `${ISSUER_PATH}.`);
// The tokeninfo issuer's own variables (VERIFIER_TOKENINFO_URI) beside the JWT issuer's.
const issuerVariables = [
  ...jwtVariables,
  ...variablesOf(tokeninfoIssuerSettings, `${ISSUER_PATH}.`).filter(
    (v) => !jwtVariables.some((jwt) => jwt.name === v.name),
  ),
];
const policyVariables = variablesOf(policySettings, `${POLICY_PATH}.`);
const singleIssuerVariables = [...issuerVariables, ...policyVariables];

/** Every variable the verifier reads, in the order the reference lists them. */
const configFileVariable = { name: CONFIG_FILE_VARIABLE, path: '', setting: undefined };
export const ENVIRONMENT: readonly SettingReference[] = [
  ...singleIssuerVariables,
  ...rootVariables.filter((v) => v.path === 'clientClaims'),
  configFileVariable,
  ...rootVariables.filter((v) => v.path !== 'clientClaims'),
].map((v: Variable | typeof configFileVariable) => ({
  path: v.path,
  env: v.name,
  default: v.setting === undefined ? undefined : describeDefault(v.setting),
  doc: v.setting?.doc ?? 'Path of a JSON file with several issuers and named policies.',
}));

/** Every variable with its default as written in the environment ('' when none). */
export const ENV_DEFAULTS: Readonly<Record<string, string>> = Object.fromEntries(
  ENVIRONMENT.map((row) => [row.env ?? '', row.default ?? ''] as const),
);

export function describeDefault(setting: Setting<unknown>): string | undefined {
  if (setting.inherit !== undefined) return undefined;
  const value = setting.default;
  if (value === undefined) return undefined;
  if (Array.isArray(value)) return value.join(',');
  return typeof value === 'string' || typeof value === 'number'
    ? String(value)
    : JSON.stringify(value);
}

/**
 * The document the environment describes: the file named by VERIFIER_CONFIG (read by `readFile`)
 * with the top-level variables laid over it, or the single-issuer variables.
 */
export function documentFromEnv(
  env: NodeJS.ProcessEnv,
  readFile: DocumentReader,
  problems: Problems,
): EnvDocument {
  const known = new Set(ENVIRONMENT.map((row) => row.env));
  for (const name of Object.keys(env)) {
    if (name.startsWith('VERIFIER_') && !known.has(name))
      problems.push(`${name}: unknown variable (known: ${[...known].join(', ')})`);
  }
  const given = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const file = given(CONFIG_FILE_VARIABLE);
  const document: Record<string, unknown> = (file === undefined ? {} : readFile(file)) ?? {};
  const labels = new Map<string, string>();
  const put = ({ name, path, setting }: Variable, into: Record<string, unknown>, at = path) => {
    const value = given(name);
    if (value === undefined) return;
    labels.set(path, name);
    setPath(into, at.split('.'), fromEnv(setting.kind, value));
  };
  // Variables win over the file, as flags win over a config file.
  for (const variable of rootVariables) put(variable, document);

  const issuerGiven = given('VERIFIER_ISSUER') !== undefined;
  if (file !== undefined) {
    for (const { name } of singleIssuerVariables.filter((v) => given(v.name) !== undefined))
      problems.push(`${name}: not used together with ${CONFIG_FILE_VARIABLE} (put it in the file)`);
  } else if (issuerGiven) {
    // No `type`: JWT, unless VERIFIER_PRESET names a preset for another kind of issuer.
    const issuer: Record<string, unknown> = {};
    const policy: Record<string, unknown> = { issuers: [given('VERIFIER_ISSUER')] };
    for (const variable of issuerVariables) {
      labels.set(variable.path, variable.name);
      put(variable, issuer, variable.path.slice(ISSUER_PATH.length + 1));
    }
    for (const variable of policyVariables) {
      labels.set(variable.path, variable.name);
      labels.set(`${ALIAS_PATH}${variable.path.slice(POLICY_PATH.length)}`, variable.name);
      put(variable, policy, variable.path.slice(POLICY_PATH.length + 1));
    }
    labels.set(`${POLICY_PATH}.issuers`, 'VERIFIER_ISSUER');
    labels.set(`${ALIAS_PATH}.issuers`, 'VERIFIER_ISSUER');
    document.issuers = [issuer];
    // One policy under the name NGINX asks for on /secret, and under `default` for a /verify
    // without `?policy=`; a problem in it is reported once, for `secret`.
    document.policies = { [ENV_POLICY]: policy, [DEFAULT_POLICY]: policy };
  }
  return { document, labels, file, singleIssuer: file === undefined && issuerGiven };
}

function fromEnv(kind: Kind<unknown>, value: string): unknown {
  return kind.fromEnv ? kind.fromEnv(value) : value;
}

function setPath(target: Record<string, unknown>, path: readonly string[], value: unknown): void {
  const [head, ...rest] = path;
  if (head === undefined) return;
  if (rest.length === 0) {
    target[head] = value;
    return;
  }
  const current = target[head];
  const next = typeof current === 'object' && current !== null ? current : (target[head] = {});
  setPath(next as Record<string, unknown>, rest, value);
}

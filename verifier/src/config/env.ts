// VERIFIER_* variables as a configuration document: each is the flat spelling of the setting whose
// row declares it as `env`, its string put where the file's value would be, read by the same schema.
// They are laid over the file VERIFIER_CONFIG names, or spell one issuer and one policy.
import { DEFAULT_POLICY, jsonSchema, type JsonSchema } from './model.js';
import type { FileReader } from './values.js';

const CONFIG_FILE = 'VERIFIER_CONFIG';
const ENV_POLICY = 'secret';

/** One setting as the reference lists it, read from the published JSON Schema. */
export interface SettingRow {
  readonly path: string;
  readonly env: string | undefined;
  /** As an operator would write it; undefined: required or unset. */
  readonly default: string | undefined;
  readonly required: boolean;
  readonly doc: string;
  readonly node: JsonSchema;
}

/** The settings of one section, groups (`cache`, `jwks`, …) flattened into dotted paths. */
export function rowsOf(section: JsonSchema | undefined, prefix = ''): SettingRow[] {
  return Object.entries(section?.properties ?? {}).flatMap(([name, node]): SettingRow[] => {
    const path = `${prefix}${name}`;
    if (node.description === undefined)
      return node.properties === undefined ? [] : rowsOf(node, `${path}.`);
    const fallback = node.default;
    const shown = Array.isArray(fallback) ? fallback.join(',') : fallback?.toString();
    const required = section?.required?.includes(name) ?? false;
    return [{ path, env: node.env, default: shown, required, doc: node.description, node }];
  });
}

const schema = jsonSchema();
/** The issuer sections by `type`, and the policy section, of the published schema. */
export const issuerSections = new Map(
  (schema.properties?.issuers?.items?.oneOf ?? []).map((variant) => [
    String(variant.properties?.type?.const),
    variant,
  ]),
);
export const policySection = schema.properties?.policies?.additionalProperties;

const ISSUER = 'issuers[0]';
const withEnv = (rows: SettingRow[], at = '') =>
  rows.filter((row) => row.env !== undefined).map((row) => ({ ...row, path: at + row.path }));
const rootRows = withEnv(rowsOf(schema));
// The JWT issuer's variables, then the tokeninfo issuer's own (VERIFIER_TOKENINFO_URI).
const issuerRows = withEnv(
  ['jwt', 'tokeninfo'].flatMap((type) => rowsOf(issuerSections.get(type))),
  `${ISSUER}.`,
).filter((row, index, rows) => rows.findIndex((first) => first.env === row.env) === index);
const policyRows = withEnv(rowsOf(policySection), `policies.${ENV_POLICY}.`);

/** Every variable the verifier reads, in the order the reference lists them; `path` in the file. */
export const ENVIRONMENT: readonly SettingRow[] = [
  ...issuerRows,
  ...policyRows,
  ...rootRows.filter((row) => row.path === 'clientClaims'),
  {
    path: '',
    env: CONFIG_FILE,
    default: undefined,
    required: false,
    doc: 'Path of a JSON file with several issuers and named policies.',
    node: {},
  },
  ...rootRows.filter((row) => row.path !== 'clientClaims'),
];

/** Every variable with its default as written in the environment ('' when none). */
export const ENV_DEFAULTS: Readonly<Record<string, string>> = Object.fromEntries(
  ENVIRONMENT.map((row) => [row.env ?? '', row.default ?? '']),
);

export interface EnvDocument {
  readonly document: Record<string, unknown>;
  /** A document path as the operator wrote it: the variable, or its place in the file. */
  readonly label: (path: string) => string;
  /** True when the document has issuers and policies to check (the file read, or the variables). */
  readonly sections: boolean;
  /** True in single-issuer mode (the document's issuer and policy come from variables). */
  readonly singleIssuer: boolean;
}

/**
 * The document the environment describes: the file named by VERIFIER_CONFIG (read by `read`) with
 * the top-level variables laid over it, or the single-issuer variables. Problems of the variables
 * themselves and of the file as a whole go to `problems`.
 */
export function documentFromEnv(
  env: NodeJS.ProcessEnv,
  read: FileReader,
  problems: string[],
): EnvDocument {
  const known = new Set(ENVIRONMENT.map((row) => row.env));
  for (const name of Object.keys(env).filter((name) => name.startsWith('VERIFIER_')))
    if (!known.has(name))
      problems.push(`${name}: unknown variable (known: ${[...known].join(', ')})`);
  const given = (name = ''): string | undefined => env[name]?.trim() || undefined;
  const file = given(CONFIG_FILE);
  const fromFile = file === undefined ? undefined : readDocument(file, read, problems);
  const document = fromFile ?? {};
  const labels = new Map<string, string>();
  const put = (rows: SettingRow[], into: Record<string, unknown>, at = '') => {
    for (const { env: name = '', path } of rows) {
      labels.set(path, name);
      const value = given(name);
      if (value !== undefined) setPath(into, path.slice(at.length), value);
    }
  };
  // Variables win over the file, as flags win over a config file.
  put(
    rootRows.filter((row) => given(row.env) !== undefined),
    document,
  );
  const singleIssuer = file === undefined && given('VERIFIER_ISSUER') !== undefined;
  if (file !== undefined) {
    for (const { env: name } of [...issuerRows, ...policyRows].filter((row) => given(row.env)))
      problems.push(`${name}: not used together with ${CONFIG_FILE} (put it in the file)`);
  } else if (singleIssuer) {
    // No `type`: JWT, unless VERIFIER_PRESET names a preset for another kind of issuer.
    const issuer = {};
    const policy = { issuers: [given('VERIFIER_ISSUER')] };
    put(issuerRows, issuer, `${ISSUER}.`);
    put(policyRows, policy, `policies.${ENV_POLICY}.`);
    labels.set(`policies.${ENV_POLICY}.issuers`, 'VERIFIER_ISSUER');
    document.issuers = [issuer];
    // One policy under the name NGINX asks for on /secret, and under `default` for a /verify
    // without `X-SG-Policy`; a problem in it is named by its variable, so it is reported once.
    document.policies = { [ENV_POLICY]: policy, [DEFAULT_POLICY]: policy };
  }
  if (file === undefined && !singleIssuer)
    problems.push('VERIFIER_ISSUER or VERIFIER_CONFIG: one of them is required');
  const fileLabel = (path: string) => (path === '' ? 'config' : `config.${path}`);
  const label = (path: string) =>
    labels.get(path.replace(`policies.${DEFAULT_POLICY}.`, `policies.${ENV_POLICY}.`)) ??
    (file === undefined ? path : fileLabel(path));
  return { document, label, sections: singleIssuer || fromFile !== undefined, singleIssuer };
}

/** The JSON file as an object; undefined (and a problem) when it cannot be read or is not one. */
function readDocument(path: string, read: FileReader, problems: string[]) {
  const problem = (message: string) => void problems.push(`${CONFIG_FILE}: ${message}`);
  let text: string;
  try {
    text = read(path);
  } catch (error) {
    return problem(`cannot read "${path}" (${(error as Error).message})`);
  }
  try {
    const root: unknown = JSON.parse(text);
    if (typeof root === 'object' && root !== null && !Array.isArray(root))
      return root as Record<string, unknown>;
    return problem('the file must hold a JSON object');
  } catch (error) {
    return problem(`not valid JSON (${(error as Error).message})`);
  }
}

/** Sets `a.b.c` in `target`, making the objects on the way (a variable wins over the file's). */
function setPath(target: Record<string, unknown>, path: string, value: string): void {
  const keys = path.split('.');
  const last = keys.pop() ?? '';
  const parent = keys.reduce<Record<string, unknown>>((at, key) => {
    const next = at[key];
    return typeof next === 'object' && next !== null ? (next as typeof at) : (at[key] = {});
  }, target);
  parent[last] = value;
}

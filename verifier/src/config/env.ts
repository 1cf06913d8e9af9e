// VERIFIER_* variables as a configuration document: each variable is the flat spelling of one
// setting of the schema (the flags-to-options conversion oauth2-proxy does), found through the
// `env` each row declares. Its string goes where the file's value would, and the same schema
// reads it. The single-issuer variables (VERIFIER_ISSUER, …) spell one issuer (JWT unless its
// preset says otherwise) and one policy, named `secret` (what NGINX's /secret asks for) and
// answered as `default` too.
import { DEFAULT_POLICY, ENV_POLICY, jsonSchema, type JsonSchema } from './model.js';

/** Names the JSON file; exclusive with the single-issuer variables. */
export const CONFIG_FILE_VARIABLE = 'VERIFIER_CONFIG';

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
    return [
      {
        path,
        env: node.env,
        default: Array.isArray(fallback) ? fallback.join(',') : fallback?.toString(),
        required: section?.required?.includes(name) ?? false,
        doc: node.description,
        node,
      },
    ];
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
export const policySection = schema.properties?.policies?.additionalProperties as JsonSchema;

const ISSUER_PATH = 'issuers[0]';
const POLICY_PATH = `policies.${ENV_POLICY}`;
const ALIAS_PATH = `policies.${DEFAULT_POLICY}`;
const withEnv = (rows: SettingRow[]) => rows.filter((row) => row.env !== undefined);
const rootRows = withEnv(rowsOf(schema));
const jwtRows = withEnv(rowsOf(issuerSections.get('jwt')));
// The tokeninfo issuer's own variables (VERIFIER_TOKENINFO_URI) beside the JWT issuer's.
const issuerRows = [
  ...jwtRows,
  ...withEnv(rowsOf(issuerSections.get('tokeninfo'))).filter(
    (row) => !jwtRows.some((jwt) => jwt.env === row.env),
  ),
];
const policyRows = withEnv(rowsOf(policySection));

/** Every variable the verifier reads, in the order the reference lists them; `path` in the file. */
export const ENVIRONMENT: readonly SettingRow[] = [
  ...issuerRows.map((row) => ({ ...row, path: `${ISSUER_PATH}.${row.path}` })),
  ...policyRows.map((row) => ({ ...row, path: `${POLICY_PATH}.${row.path}` })),
  ...rootRows.filter((row) => row.path === 'clientClaims'),
  {
    path: '',
    env: CONFIG_FILE_VARIABLE,
    default: undefined,
    required: false,
    doc: 'Path of a JSON file with several issuers and named policies.',
    node: {},
  },
  ...rootRows.filter((row) => row.path !== 'clientClaims'),
];

/** Every variable with its default as written in the environment ('' when none). */
export const ENV_DEFAULTS: Readonly<Record<string, string>> = Object.fromEntries(
  ENVIRONMENT.map((row) => [row.env ?? '', row.default ?? ''] as const),
);

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

/**
 * The document the environment describes: the file named by VERIFIER_CONFIG (read by `readFile`)
 * with the top-level variables laid over it, or the single-issuer variables.
 */
export function documentFromEnv(
  env: NodeJS.ProcessEnv,
  readFile: DocumentReader,
  problems: string[],
): EnvDocument {
  const known = new Set(ENVIRONMENT.map((row) => row.env));
  for (const name of Object.keys(env)) {
    if (name.startsWith('VERIFIER_') && !known.has(name))
      problems.push(`${name}: unknown variable (known: ${[...known].join(', ')})`);
  }
  const given = (name: string | undefined): string | undefined => {
    const value = name === undefined ? undefined : env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const file = given(CONFIG_FILE_VARIABLE);
  const document: Record<string, unknown> = (file === undefined ? {} : readFile(file)) ?? {};
  const labels = new Map<string, string>();
  const put = (rows: SettingRow[], into: Record<string, unknown>, at: string) => {
    for (const { env: name = '', path } of rows) {
      labels.set(at + path, name);
      const value = given(name);
      if (value !== undefined) setPath(into, path.split('.'), value);
    }
  };
  // Variables win over the file, as flags win over a config file.
  put(
    rootRows.filter((row) => given(row.env) !== undefined),
    document,
    '',
  );

  const issuerGiven = given('VERIFIER_ISSUER') !== undefined;
  if (file !== undefined) {
    for (const { env: name } of [...issuerRows, ...policyRows].filter((row) => given(row.env)))
      problems.push(`${name}: not used together with ${CONFIG_FILE_VARIABLE} (put it in the file)`);
  } else if (issuerGiven) {
    // No `type`: JWT, unless VERIFIER_PRESET names a preset for another kind of issuer.
    const issuer: Record<string, unknown> = {};
    const policy: Record<string, unknown> = { issuers: [given('VERIFIER_ISSUER')] };
    put(issuerRows, issuer, `${ISSUER_PATH}.`);
    put(policyRows, policy, `${POLICY_PATH}.`);
    for (const { env: name = '', path } of policyRows) labels.set(`${ALIAS_PATH}.${path}`, name);
    labels.set(`${POLICY_PATH}.issuers`, 'VERIFIER_ISSUER');
    labels.set(`${ALIAS_PATH}.issuers`, 'VERIFIER_ISSUER');
    document.issuers = [issuer];
    // One policy under the name NGINX asks for on /secret, and under `default` for a /verify
    // without `?policy=`; a problem in it is named by its variable, so it is reported once.
    document.policies = { [ENV_POLICY]: policy, [DEFAULT_POLICY]: policy };
  }
  return { document, labels, file, singleIssuer: file === undefined && issuerGiven };
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

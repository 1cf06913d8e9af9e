// VERIFIER_* variables as a configuration document: each is the flat spelling of the setting whose
// row declares it as `env`, its string put where the file's value would be, read by the same schema.
// They are laid over the file VERIFIER_CONFIG names, or spell one issuer and one policy.
import { z } from 'zod';
import { DEFAULT_POLICY, issuerSchema, policySchema, rootSchema } from './model.js';
import { REMOVED_VARIABLES } from './redis.js';
import type { FileReader } from './values.js';

const CONFIG_FILE = 'VERIFIER_CONFIG';
const ENV_POLICY = 'secret';
const ISSUER = 'issuers[0]';

/** A VERIFIER_* variable and the place in the file of the setting it sets (VERIFIER_CONFIG: ''). */
export type Variable = Readonly<{ env: string; path: string }>;

/** The issuer section of one `type` (none written: `jwt`). */
export const issuerKind = (type: unknown) =>
  issuerSchema.options.find((kind) => kind.shape.type.safeParse(type).success);

/** The variables a section's rows declare, groups (`cache`, `jwks`, …) as dotted paths. */
function variablesOf(shape: Readonly<Record<string, z.ZodType>> = {}, at = ''): Variable[] {
  return Object.entries(shape).flatMap(([name, kind]): Variable[] => {
    const env = kind.meta()?.env;
    if (env !== undefined) return [{ env, path: at + name }];
    const group = kind instanceof z.ZodPrefault ? kind.unwrap() : kind;
    return group instanceof z.ZodObject ? variablesOf(group.shape, `${at}${name}.`) : [];
  });
}

const rootRows = variablesOf(rootSchema.shape);
// The JWT issuer's variables, then the tokeninfo issuer's own (VERIFIER_TOKENINFO_URI).
const issuerRows = ['jwt', 'tokeninfo']
  .flatMap((type) => variablesOf(issuerKind(type)?.shape, `${ISSUER}.`))
  .filter((row, index, rows) => rows.findIndex((first) => first.env === row.env) === index);
const policyRows = variablesOf(policySchema.shape, `policies.${ENV_POLICY}.`);

/** Every variable the verifier reads, in the order the reference lists them. */
export const ENVIRONMENT: readonly Variable[] = [
  ...issuerRows,
  ...policyRows,
  ...rootRows.filter((row) => row.path === 'clientClaims'),
  { env: CONFIG_FILE, path: '' },
  ...rootRows.filter((row) => row.path !== 'clientClaims'),
];

/**
 * The document the environment describes: the file named by VERIFIER_CONFIG (read by `read`) with
 * the top-level variables laid over it, or the single-issuer variables. Problems of the variables
 * themselves and of the file as a whole go to `problems`. `label` names a document path as the
 * operator wrote it (the variable, or its place in the file); `sections` is true when there are
 * issuers and policies to check (the file read, or the variables).
 */
export function documentFromEnv(env: NodeJS.ProcessEnv, read: FileReader, problems: string[]) {
  const known = new Set(ENVIRONMENT.map((row) => row.env));
  for (const name of Object.keys(env).filter((name) => name.startsWith('VERIFIER_')))
    if (REMOVED_VARIABLES[name] !== undefined)
      problems.push(`${name}: removed; use ${REMOVED_VARIABLES[name]} (it serves both stores)`);
    else if (!known.has(name))
      problems.push(`${name}: unknown variable (known: ${[...known].join(', ')})`);
  const given = (name = ''): string | undefined => env[name]?.trim() || undefined;
  const file = given(CONFIG_FILE);
  const fromFile = file === undefined ? undefined : readDocument(file, read, problems);
  const document = fromFile ?? {};
  const labels = new Map<string, string>();
  const put = (into: Record<string, unknown>, rows: readonly Variable[], at = '') => {
    for (const { env: name, path } of rows) {
      labels.set(path, name);
      const value = given(name);
      if (value !== undefined) setPath(into, path.slice(at.length), value);
    }
  };
  // Variables win over the file, as flags win over a config file.
  const overFile = rootRows.filter((row) => given(row.env));
  put(document, overFile);
  const singleIssuer = file === undefined && given('VERIFIER_ISSUER') !== undefined;
  if (file !== undefined) {
    for (const { env: name } of [...issuerRows, ...policyRows].filter((row) => given(row.env)))
      problems.push(`${name}: not used together with ${CONFIG_FILE} (put it in the file)`);
  } else if (singleIssuer) {
    // No `type`: JWT, unless VERIFIER_PRESET names a preset for another kind of issuer.
    const issuer = {};
    const policy = { issuers: [given('VERIFIER_ISSUER')] };
    put(issuer, issuerRows, `${ISSUER}.`);
    put(policy, policyRows, `policies.${ENV_POLICY}.`);
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
  let root: unknown;
  try {
    root = JSON.parse(read(path));
  } catch (error) {
    const why = (error as Error).message;
    return problem(
      error instanceof SyntaxError ? `not valid JSON (${why})` : `cannot read "${path}" (${why})`,
    );
  }
  if (typeof root === 'object' && root !== null && !Array.isArray(root))
    return root as Record<string, unknown>;
  return problem('the file must hold a JSON object');
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

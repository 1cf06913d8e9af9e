// Reads the configuration once, at start, into a frozen VerifierConfig: the environment becomes a
// document (config-env.ts), the one schema (config-model.ts) checks it section by section, the
// rules between settings run on what validated, then the files it names are read through the one
// reader. An issuer's preset row (presets.ts) is laid under the issuer before its schema reads
// it. Every problem is collected and reported in one ConfigError, named as the operator wrote it
// (`VERIFIER_LISTEN`, `config.issuers[0].audience`).
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { CONFIG_FILE_VARIABLE, documentFromEnv, issuerSections } from './env.js';
import {
  checkConfig,
  documentSchema,
  INHERITED,
  issuerSchema,
  policySchema,
  type IssuerConfig,
  type PolicyConfig,
  type RootSettings,
  type VerifierConfig,
} from './model.js';
import { createIo, Deferred, type FileReader } from './values.js';
import { withPreset } from './presets.js';

export { ENV_DEFAULTS, ENVIRONMENT } from './env.js';
export type { FileReader } from './values.js';

/** Thrown at start when the configuration is unusable; the message lists every problem. */
export class ConfigError extends TypeError {
  override readonly name = 'ConfigError';
  constructor(readonly problems: readonly string[]) {
    super(`invalid verifier configuration:\n  - ${problems.join('\n  - ')}`);
  }
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const join = (at: string, key: PropertyKey) =>
  typeof key === 'number' ? `${at}[${key}]` : at === '' ? String(key) : `${at}.${String(key)}`;
// The top level is checked with its sections taken as they come; each section is then checked by
// its own schema, so a broken issuer does not hide the problems of a policy.
const topLevel = documentSchema(z.unknown(), z.unknown());

/**
 * Builds the configuration from the environment. Single-issuer mode (VERIFIER_ISSUER) defines one
 * JWT issuer and one policy named `default`; file mode (VERIFIER_CONFIG) defines issuers and
 * named policies in JSON. The two are exclusive so no setting is silently ignored.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv,
  readFile: FileReader = (path) => readFileSync(path, 'utf8'),
): VerifierConfig {
  const problems: string[] = [];
  let fileFailed = false;
  const readDocument = (path: string): Json | undefined => {
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
    return isObject(root) ? root : problem('the file must hold a JSON object');
  };
  const source = documentFromEnv(env, readDocument, problems);
  const { document } = source;
  const sectionsGiven = source.file !== undefined || source.singleIssuer;
  if (!sectionsGiven) problems.push('VERIFIER_ISSUER or VERIFIER_CONFIG: one of them is required');

  const label = (path: string): string =>
    source.labels.get(path) ??
    (source.file === undefined ? path : path === '' ? 'config' : `config.${path}`);
  const report = (path: string, message: string) => problems.push(`${label(path)}: ${message}`);
  /** Parses one section at `at`, reporting its problems; its value when it is valid. */
  function check<T>(schema: z.ZodType<T>, value: unknown, at: string): T | undefined {
    const result = schema.safeParse(value, { reportInput: true });
    // Unknown fields first: a misspelt name explains the "missing" value that follows.
    const issues = (result.error?.issues ?? []).sort(
      (a, b) => Number(b.code === 'unrecognized_keys') - Number(a.code === 'unrecognized_keys'),
    );
    for (const issue of issues) {
      const path = issue.path.reduce<string>(join, at);
      if (!sectionsGiven && /^(?:issuers|policies)\b/.test(path)) continue;
      if (fileFailed && /^(?:issuers|policies)$/.test(path)) continue;
      const name = label(path);
      problems.push(
        source.singleIssuer && issue.input === undefined && name.startsWith('VERIFIER_')
          ? `${name}: required with VERIFIER_ISSUER`
          : `${name}: ${issue.message}`,
      );
    }
    return result.data;
  }

  const top = check(topLevel, document, '');
  const { $schema: _schema, issuers: _issuers, policies: _policies, ...settings } = top ?? {};
  const root = top && (settings as RootSettings);

  const declared = new Map<string, unknown>();
  const issuers: Array<{ at: string; issuer: IssuerConfig }> = [];
  const fieldsOf = (type: string) => Object.keys(issuerSections.get(type)?.properties ?? {});
  (Array.isArray(document.issuers) ? document.issuers : []).forEach((written: unknown, index) => {
    const at = `issuers[${index}]`;
    const raw = withPreset(written, fieldsOf, document.clientClaims !== undefined);
    if (isObject(raw) && typeof raw.issuer === 'string') declared.set(raw.issuer, raw.type);
    const parsed = check(issuerSchema, raw, at) as Json | undefined;
    if (parsed === undefined) return;
    for (const [field, from] of Object.entries(INHERITED))
      // Only where the issuer's type has the setting (a user-info issuer has no `clientClaims`).
      if (
        root &&
        parsed[field] === undefined &&
        issuerSections.get(String(parsed.type))?.properties?.[field]
      )
        parsed[field] = root[from];
    const issuer = parsed as unknown as IssuerConfig;
    if (issuers.some((seen) => seen.issuer.issuer === issuer.issuer))
      report(at, `duplicate issuer "${issuer.issuer}"`);
    else issuers.push({ at, issuer });
  });

  const policies: PolicyConfig[] = [];
  const policyIssuers: Array<Pick<PolicyConfig, 'name' | 'issuers'>> = [];
  for (const [name, raw] of Object.entries(isObject(document.policies) ? document.policies : {})) {
    const parsed = check(policySchema, raw, `policies.${name}`);
    if (parsed !== undefined) policies.push({ name, ...parsed } as unknown as PolicyConfig);
    const named = policySchema.shape.issuers.safeParse(isObject(raw) ? raw.issuers : undefined);
    if (named.success) policyIssuers.push({ name, issuers: named.data });
  }

  checkConfig({ root, declared, issuers, policies: policyIssuers }, report, label);

  // Values that name a file or a variable are read last, for every section that validated.
  const io = createIo(readFile, env);
  // Loaded values are frozen on the way; class instances (a loaded key) are left as they are.
  const load = <T>(value: T, at: string): T => {
    if (value instanceof Deferred) {
      const loaded: unknown = value.load(io, (why, path = []) =>
        report(path.reduce(join, at), why),
      );
      return load(loaded as T, at);
    }
    if (Array.isArray(value))
      return Object.freeze(value.map((item: unknown, i) => load(item, join(at, i)))) as T;
    if (!isObject(value) || Object.getPrototypeOf(value) !== Object.prototype) return value;
    const entries = Object.entries(value).map(([key, item]) => [key, load(item, join(at, key))]);
    return Object.freeze(Object.fromEntries(entries)) as T;
  };
  const loadedRoot = root && load(root, '');
  const loadedIssuers = issuers.map(({ at, issuer }) => load(issuer, at));
  const loadedPolicies = policies.map((policy) => load(policy, `policies.${policy.name}`));

  // The single-issuer policy is checked under both its names; each problem is said once.
  if (problems.length > 0 || loadedRoot === undefined)
    throw new ConfigError([...new Set(problems)]);
  return Object.freeze({
    ...loadedRoot,
    issuers: readOnly(new Map(loadedIssuers.map((issuer) => [issuer.issuer, issuer]))),
    policies: readOnly(new Map(loadedPolicies.map((policy) => [policy.name, policy]))),
  });
}

/** A frozen Map still has set(): hide the mutators so the object really is read-only. */
function readOnly<K, V>(map: Map<K, V>): ReadonlyMap<K, V> {
  for (const method of ['set', 'delete', 'clear'] as const) {
    Object.defineProperty(map, method, {
      value: () => {
        throw new TypeError('configuration is read-only');
      },
    });
  }
  return Object.freeze(map);
}

// Reads the configuration once, at start, into a frozen VerifierConfig: the environment as a
// document (env.ts), checked section by section by the one schema (model.ts), every problem named
// as the operator wrote it (`VERIFIER_LISTEN`, `config.issuers[0].audience`) in one ConfigError.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { documentFromEnv, issuerKind } from './env.js';
import * as model from './model.js';
import { withPreset } from './presets.js';
import { createIo, Deferred, type FileReader } from './values.js';

export { ENVIRONMENT } from './env.js';

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
// The top level with its issuers and policies taken as they come: each is checked on its own.
const topLevel = model.documentSchema(z.unknown(), z.unknown());

/**
 * Builds the configuration from the environment: the single-issuer variables (VERIFIER_ISSUER,
 * one JWT issuer and the policy NGINX asks for), or the JSON file VERIFIER_CONFIG names (issuers
 * and named policies). The two are exclusive, so no setting is silently ignored.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv,
  readFile: FileReader = (path) => readFileSync(path, 'utf8'),
): model.VerifierConfig {
  const problems: string[] = [];
  const { document, label, sections, singleIssuer } = documentFromEnv(env, readFile, problems);
  const report = (path: string, message: string) => problems.push(`${label(path)}: ${message}`);
  /** Parses one section at `at`, reporting its problems; its value when it is valid. */
  function check<T>(schema: z.ZodType<T>, value: unknown, at: string): T | undefined {
    const result = schema.safeParse(value, { reportInput: true });
    // Unknown fields first: a misspelt name explains the "missing" value that follows.
    const issues = (result.error?.issues ?? []).sort(
      (a, b) => Number(b.code === 'unrecognized_keys') - Number(a.code === 'unrecognized_keys'),
    );
    for (const issue of issues) {
      const name = label(issue.path.reduce<string>(join, at));
      const missing = singleIssuer && issue.input === undefined && name.startsWith('VERIFIER_');
      problems.push(`${name}: ${missing ? 'required with VERIFIER_ISSUER' : issue.message}`);
    }
    return result.data;
  }

  const top = check<Json>(sections ? topLevel : model.rootSchema, document, '');
  const { $schema: _schema, issuers: _issuers, policies: _policies, ...settings } = top ?? {};
  const root = top && (settings as model.RootSettings);

  const declared = new Map<string, unknown>();
  const issuers: Array<{ at: string; issuer: model.IssuerConfig }> = [];
  const written = sections && Array.isArray(document.issuers) ? document.issuers : [];
  written.forEach((raw: unknown, index) => {
    const at = `issuers[${index}]`;
    const withRow = withPreset(raw, document.clientClaims !== undefined);
    if (isObject(withRow) && typeof withRow.issuer === 'string')
      declared.set(withRow.issuer, withRow.type);
    const parsed = check(model.issuerSchema, withRow, at) as Json | undefined;
    if (parsed === undefined) return;
    // Only where the issuer's type has the setting (a JWT issuer has no `timeout`).
    for (const [field, from] of Object.entries(model.INHERITED))
      if (root && field in (issuerKind(parsed.type)?.shape ?? {})) parsed[field] ??= root[from];
    const issuer = parsed as unknown as model.IssuerConfig;
    if (issuers.some((seen) => seen.issuer.issuer === issuer.issuer))
      report(at, `duplicate issuer "${issuer.issuer}"`);
    else issuers.push({ at, issuer });
  });

  const policies: model.PolicyConfig[] = [];
  const policyIssuers: Array<model.Sections['policies'][number]> = [];
  const named = sections && isObject(document.policies) ? document.policies : {};
  for (const [name, raw] of Object.entries(named)) {
    const parsed = check(model.policySchema, raw, `policies.${name}`);
    if (parsed !== undefined) policies.push({ name, ...parsed } as unknown as model.PolicyConfig);
    const listed = model.policySchema.shape.issuers.safeParse(isObject(raw) ? raw.issuers : []);
    const { acrValues, amrValues, maxAge } = parsed ?? {};
    if (listed.success)
      policyIssuers.push({ name, issuers: listed.data, acrValues, amrValues, maxAge });
  }

  model.checkConfig({ root, declared, issuers, policies: policyIssuers }, report, label);

  // Values that name a file or a variable are read last, for every section that validated;
  // loaded values are frozen on the way (class instances, such as a loaded key, as they are).
  const io = createIo(readFile, env);
  const load = <T>(value: T, at: string): T => {
    if (value instanceof Deferred)
      return load(value.load(io, (why, path = []) => report(path.reduce(join, at), why)) as T, at);
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
  const refuse = () => {
    throw new TypeError('configuration is read-only');
  };
  for (const method of ['set', 'delete', 'clear'])
    Object.defineProperty(map, method, { value: refuse });
  return Object.freeze(map);
}

// Reads the configuration once, at start, into a frozen VerifierConfig: the environment as a
// document (env.ts), checked section by section by the one schema (model.ts) and the rules between
// settings it runs (rules.ts), every problem named as the operator wrote it (`VERIFIER_LISTEN`,
// `config.issuers[0].audience`) in one ConfigError.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { documentFromEnv, ENVIRONMENT, issuerKind } from './env.js';
import * as model from './model.js';
import { withPreset } from './presets.js';
import { redact } from './redact.js';
import { REMOVED_NAMES } from './redis.js';
import { createIo, Deferred, type FileReader } from './values.js';

export { ENVIRONMENT } from './env.js';

/** Thrown at start when the configuration is unusable; the message lists every problem. */
export class ConfigError extends TypeError {
  override readonly name = 'ConfigError';
  /** One line per problem, with every secret value and URL userinfo redacted. */
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    const said = problems.map(redact);
    super(`invalid verifier configuration:\n  - ${said.join('\n  - ')}`);
    this.problems = said;
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
 * and named policies). The two are exclusive, so no setting is silently ignored. A removed name
 * (redis.ts) is a problem naming the setting that replaced it, never its value.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv,
  readFile: FileReader = (path) => readFileSync(path, 'utf8'),
): model.VerifierConfig {
  const problems: string[] = [];
  const written = documentFromEnv(env, readFile, problems);
  const { label, sections, singleIssuer } = written;
  // A removed name in the file: one line naming its replacement, instead of "unknown key".
  for (const [removed, now] of Object.entries(REMOVED_NAMES)) {
    const [section = '', key = ''] = removed.split('.');
    const holder = written.document[section];
    if (!isObject(holder) || !(key in holder)) continue;
    problems.push(`${label(removed)}: removed; use ${label(now)} (it serves both stores)`);
    written.document[section] = Object.fromEntries(
      Object.entries(holder).filter(([name]) => name !== key),
    );
  }
  // Each issuer with its preset's row laid under it, so the rules see the type a preset gives.
  const rootClientClaims = written.document.clientClaims !== undefined;
  const document = Array.isArray(written.document.issuers)
    ? {
        ...written.document,
        issuers: written.document.issuers.map((raw) => withPreset(raw, rootClientClaims)),
      }
    : written.document;
  const report = (path: string, message: string) => problems.push(`${label(path)}: ${message}`);
  // A setting a message names: as the operator wrote it, else (or `asVariable`) by its variable.
  const envOf = (path: string) => ENVIRONMENT.find((row) => row.path === path)?.env;
  const nameOf = (path: string, asVariable = false) =>
    ((asVariable || label(path) === path) && envOf(path)) || label(path);
  // A rule's problem about one issuer or policy is said with that section's own problems.
  const held = new Map<string, string[]>();
  const sayHeld = (section: string) => {
    problems.push(...(held.get(section) ?? []));
    held.delete(section);
  };
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
      // A rule names other settings by path (rules.ts); they are named as the operator wrote them.
      const names =
        issue.code === 'custom' ? (issue.params?.names as string[] | undefined) : undefined;
      const message = issue.message.replace(/\{(\d+)\}/g, (_, index: string) =>
        nameOf((names?.[Number(index)] ?? '').split('.').reduce(join, at)),
      );
      const line = `${name}: ${missing ? 'required with VERIFIER_ISSUER' : message}`;
      const [kind, key] = issue.path;
      const section =
        at !== '' || names === undefined || key === undefined
          ? undefined
          : kind === 'issuers'
            ? join('issuers', key)
            : kind === 'policies'
              ? join('policies', key)
              : undefined;
      if (section === undefined) problems.push(line);
      else held.set(section, [...(held.get(section) ?? []), line]);
    }
    return result.data;
  }

  const top = check<Json>(sections ? topLevel : model.rootSchema, document, '');
  const { $schema: _schema, issuers: _issuers, policies: _policies, ...settings } = top ?? {};
  const root = top && (settings as unknown as model.RootSettings);

  // A duplicate issuer is a rule's problem (rules.ts); the first one is kept.
  const issuers: Array<{ at: string; issuer: model.IssuerConfig }> = [];
  (sections && Array.isArray(document.issuers) ? document.issuers : []).forEach((raw, index) => {
    const at = `issuers[${index}]`;
    const parsed = check(model.issuerSchema, raw, at) as Json | undefined;
    sayHeld(at);
    if (parsed === undefined) return;
    // Only where the issuer's type has the setting (a JWT issuer has no `timeout`).
    for (const [field, from] of Object.entries(model.INHERITED))
      if (root && field in (issuerKind(parsed.type)?.shape ?? {})) parsed[field] ??= root[from];
    const issuer = parsed as unknown as model.IssuerConfig;
    if (!issuers.some((seen) => seen.issuer.issuer === issuer.issuer)) issuers.push({ at, issuer });
  });

  const policies: model.PolicyConfig[] = [];
  const named = sections && isObject(document.policies) ? document.policies : {};
  for (const [name, raw] of Object.entries(named)) {
    const parsed = check(model.policySchema, raw, `policies.${name}`);
    sayHeld(`policies.${name}`);
    if (parsed !== undefined) policies.push({ name, ...parsed } as unknown as model.PolicyConfig);
  }
  for (const section of held.keys()) sayHeld(section);

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

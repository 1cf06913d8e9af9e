// Reads the configuration once, at start, into a frozen VerifierConfig: the environment as a
// document (env.ts), each section parsed once by the one schema (model.ts) with the rules between
// settings run as its checks (rules.ts), every problem said as the operator wrote it
// (problems.ts) in one ConfigError.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { documentFromEnv, issuerKind } from './env.js';
import * as model from './model.js';
import { withPreset } from './presets.js';
import { ConfigError, createProblems, join } from './problems.js';
import { withoutRemovedNames } from './redis.js';
import { createIo, loadDeferred, type FileReader } from './values.js';

export { ENVIRONMENT } from './env.js';
export { ConfigError } from './problems.js';

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
  const envProblems: string[] = [];
  const written = documentFromEnv(env, readFile, envProblems);
  const { label, sections, singleIssuer } = written;
  const said = createProblems(label, singleIssuer);
  const removed = withoutRemovedNames(written.document, label);
  said.add(...envProblems, ...removed.problems);
  // Each issuer with its preset's row laid under it, so the rules see the type a preset gives.
  const rootClientClaims = removed.document.clientClaims !== undefined;
  const rawIssuers = Array.isArray(removed.document.issuers)
    ? removed.document.issuers.map((raw) => withPreset(raw, rootClientClaims))
    : undefined;
  const document = rawIssuers ? { ...removed.document, issuers: rawIssuers } : removed.document;

  const top = said.check<Json>(sections ? topLevel : model.rootSchema, document, '');
  const { $schema: _schema, issuers: _issuers, policies: _policies, ...settings } = top ?? {};
  const root = top && (settings as unknown as model.RootSettings);
  const issuers: Array<[string, model.IssuerConfig]> = [];
  (sections ? (rawIssuers ?? []) : []).forEach((raw, index) => {
    const parsed = said.check(model.issuerSchema, raw, `issuers[${index}]`) as Json | undefined;
    if (parsed === undefined) return;
    // Only where the issuer's type has the setting (a JWT issuer has no `timeout`).
    for (const [field, from] of Object.entries(model.INHERITED))
      if (root && field in (issuerKind(parsed.type)?.shape ?? {})) parsed[field] ??= root[from];
    // A duplicate issuer is a rule's problem (rules.ts); the first one is kept.
    const issuer = parsed as unknown as model.IssuerConfig;
    if (!issuers.some(([, seen]) => seen.issuer === issuer.issuer))
      issuers.push([`issuers[${index}]`, issuer]);
  });
  const policies: Array<[string, model.PolicyConfig]> = [];
  const named = sections && isObject(document.policies) ? document.policies : {};
  for (const [name, raw] of Object.entries(named)) {
    const parsed = said.check(model.policySchema, raw, `policies.${name}`);
    if (parsed !== undefined)
      policies.push([`policies.${name}`, { name, ...parsed } as unknown as model.PolicyConfig]);
  }
  said.flush();

  // Values that name a file or a variable are read last, for every section that validated.
  const io = createIo(readFile, env);
  const load = <T>(value: T, at: string): T =>
    loadDeferred(value, io, (why, path) => said.report(path.reduce<string>(join, at), why));
  const loadedRoot = root && load(root, '');
  const loadedIssuers = issuers.map(([at, issuer]) => load(issuer, at));
  const loadedPolicies = policies.map(([at, policy]) => load(policy, at));
  if (said.all().length > 0 || loadedRoot === undefined) throw new ConfigError(said.all());
  return Object.freeze({
    ...loadedRoot,
    issuers: readOnly(new Map(loadedIssuers.map((issuer) => [issuer.issuer, issuer]))),
    policies: readOnly(new Map(loadedPolicies.map((policy) => [policy.name, policy]))),
  });
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A frozen Map still has set(): hide the mutators so the object really is read-only. */
function readOnly<K, V>(map: Map<K, V>): ReadonlyMap<K, V> {
  const refuse = () => {
    throw new TypeError('configuration is read-only');
  };
  for (const method of ['set', 'delete', 'clear'])
    Object.defineProperty(map, method, { value: refuse });
  return Object.freeze(map);
}

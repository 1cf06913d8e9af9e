// The one validator: walks the tables of config-model.ts over a configuration document (the JSON
// file and the environment variables, merged) and reports every problem, each named the way the
// operator wrote it (`VERIFIER_LISTEN`, `config.issuers[0].audience`). It does no I/O: sections
// that name files (plugins) are loaded afterwards through the one reader, see `load`.
import type { FileReader, Problems } from './config-kinds.js';
import {
  checkIssuer,
  checkPolicy,
  checkRoot,
  issuerTables,
  POLICY_NAME,
  policySettings,
  rootSettings,
  type IssuerConfig,
  type IssuerType,
  type PolicyConfig,
  type RootSettings,
  type Setting,
  type Table,
  type VerifierConfig,
} from './config-model.js';
import { presetRow, withPreset } from './presets.js';

/** How document paths are named in problems, and what a missing required value is called. */
export interface Naming {
  readonly label: (path: string) => string;
  /** The problem for a missing required value; undefined when it was already reported. */
  readonly missing: (path: string, phrase: string) => string | undefined;
}

/** A validated document, and the file reads its plugin sections still need. */
export interface Validated {
  readonly config: VerifierConfig;
  /**
   * Runs every pending load through `read` (and `env` for secrets named by variable), filling the
   * config in place before it is frozen.
   */
  load(read: FileReader, problems: Problems, env?: NodeJS.ProcessEnv): void;
}

type Json = Record<string, unknown>;

export function validateDocument(root: Json, naming: Naming, problems: Problems): Validated {
  const loads: Array<(read: FileReader, env: NodeJS.ProcessEnv) => void> = [];
  const { label } = naming;
  const join = (path: string, name: string) => (path === '' ? name : `${path}.${name}`);

  function missing(path: string, phrase: string): void {
    const problem = naming.missing(path, phrase);
    if (problem !== undefined) problems.push(problem);
  }

  function checkFields(path: string, value: Json, known: readonly string[]): void {
    for (const key of Object.keys(value)) {
      if (!known.includes(key))
        problems.push(`${label(path)}: unknown field "${key}" (known: ${known.join(', ')})`);
    }
  }

  function readTable(
    table: Table,
    raw: Json,
    path: string,
    inherited?: RootSettings,
    out: Json = {},
  ): Json {
    for (const [name, entry] of Object.entries(table)) {
      const at = join(path, name);
      if (!isSetting(entry)) {
        const group = raw[name] ?? {};
        if (!isObject(group)) problems.push(`${label(at)}: expected an object`);
        else checkFields(at, group, Object.keys(entry));
        out[name] = readTable(entry, isObject(group) ? group : {}, at);
        continue;
      }
      const before = problems.length;
      out[name] = readSetting(entry, raw[name], at, inherited);
      const { load } = entry;
      // A plugin section is loaded (its files read) only when it validated cleanly.
      if (load !== undefined && out[name] !== undefined && problems.length === before) {
        const settings = out[name];
        loads.push((read, env) => {
          out[name] = load(settings as never, label(at), read, problems, env);
        });
      }
    }
    return out;
  }

  function readSetting(
    setting: Setting<unknown>,
    raw: unknown,
    at: string,
    inherited: RootSettings | undefined,
  ): unknown {
    if (raw !== undefined) return setting.kind.parse(raw, label(at), problems);
    if (setting.inherit !== undefined && inherited !== undefined) return inherited[setting.inherit];
    if (setting.default !== undefined)
      return setting.kind.parse(setting.default, label(at), problems);
    if (!setting.optional) missing(at, setting.kind.missing ?? 'a value is required');
    return undefined;
  }

  checkFields('', root, [...Object.keys(rootSettings), 'issuers', 'policies']);
  const settings = readTable(rootSettings, root, '') as RootSettings;
  checkRoot(settings, label, problems);

  const issuers = new Map<string, IssuerConfig>();
  const issuerList = Array.isArray(root.issuers) ? (root.issuers as unknown[]) : [];
  if (issuerList.length === 0) missing('issuers', 'at least one issuer is required');
  issuerList.forEach((raw, index) => {
    const path = `issuers[${index}]`;
    if (!isObject(raw)) return void problems.push(`${label(path)}: expected an object`);
    // A preset names the issuer type it is for (Google's tokens go to its tokeninfo endpoint).
    const preset = presetRow(raw.preset);
    const type = raw.type ?? preset?.type ?? 'jwt';
    if (typeof type !== 'string' || !(type in issuerTables)) {
      problems.push(
        `${label(`${path}.type`)}: expected "jwt", "introspection", "userinfo" or "tokeninfo"`,
      );
      return;
    }
    const table: Table = issuerTables[type as IssuerType];
    checkFields(path, raw, ['type', ...Object.keys(table)]);
    const filled =
      'preset' in table ? withPreset(raw, preset, root.clientClaims !== undefined) : raw;
    const issuer = readTable(table, filled, path, settings, { type }) as IssuerConfig;
    checkIssuer(issuer, (field) => label(`${path}.${field}`), problems);
    if (issuers.has(issuer.issuer))
      problems.push(`${label(path)}: duplicate issuer "${issuer.issuer}"`);
    issuers.set(issuer.issuer, issuer);
  });

  const policies = new Map<string, PolicyConfig>();
  const policyMap = isObject(root.policies) ? root.policies : {};
  if (Object.keys(policyMap).length === 0) missing('policies', 'at least one policy is required');
  for (const [name, raw] of Object.entries(policyMap)) {
    const path = `policies.${name}`;
    if (!POLICY_NAME.test(name))
      problems.push(`${label(path)}: policy names use A-Z a-z 0-9 _ . - only`);
    if (!isObject(raw)) {
      problems.push(`${label(path)}: expected an object`);
      continue;
    }
    checkFields(path, raw, Object.keys(policySettings));
    const policy = readTable(policySettings, raw, path, undefined, { name }) as PolicyConfig;
    checkPolicy(policy, issuers, label(`${path}.issuers`), problems);
    policies.set(name, policy);
  }

  return {
    config: { ...settings, issuers, policies },
    load(read, _problems, env = {}) {
      for (const run of loads) run(read, env);
    },
  };
}

function isSetting(entry: Setting<unknown> | Table): entry is Setting<unknown> {
  return typeof (entry as Setting<unknown>).kind === 'object';
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

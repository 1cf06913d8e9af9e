// The operator's settings in a run the runner configures (`npm start`, with or without --issuer or
// --production): the runner writes the verifier's JSON file from its own issuer and policies, the
// operator's policy file (policy-file.ts) and the VERIFIER_* variables, by the precedence table of
// docs/configuration.md. Top-level variables are passed through, which the verifier lays over the
// file; issuer variables are written into the run's issuer; policy variables into every policy,
// except where the policy file sets that field. What a run cannot honour (where the verifier
// listens, an issuer the run does not use, a value contradicting a flag) stops the start with one
// line each.
import { ENVIRONMENT } from '../verifier/src/config/load.js';
import { readPolicyFile, sameSetting, withPolicyFile, type PolicyFile } from './policy-file.js';
import { ownIdpVerifierConfig, verifierConfig } from './service-env.js';
import type { OwnIdp } from './stack.js';

/** Thrown before anything starts: one line per setting the run cannot honour (exit 2). */
export class SettingsError extends Error {
  override readonly name = 'SettingsError';
  constructor(readonly problems: readonly string[]) {
    super(problems.join('\n'));
  }
}

const ISSUER = 'issuers[0].';
const POLICY = 'policies.secret.';

/** Runner variables that once had the verifier's prefix, by their new name. */
const RENAMED: Readonly<Record<string, string>> = { VERIFIER_PORT: 'SECRET_GATE_VERIFIER_PORT' };

/** Variables whose value this run decides, and why. */
export type Decided = Readonly<Record<string, string>>;

/** What this run sets from a command-line flag: a variable may repeat it, never contradict it. */
export type FlagValues = Readonly<
  Record<string, { readonly flag: string; readonly value: string }>
>;

export interface VerifierSettings {
  /** The runner's document with the operator's issuer and policy settings written in. */
  readonly document: Record<string, unknown>;
  /** The operator's top-level variables, passed to the verifier as they are. */
  readonly env: Readonly<Record<string, string>>;
}

/** The operator's VERIFIER_* variables (non-empty) out of an environment. */
export function verifierVariables(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter(
      (entry): entry is [string, string] =>
        entry[0].startsWith('VERIFIER_') && (entry[1]?.trim() ?? '') !== '',
    ),
  );
}

/**
 * Lays `given` (the operator's VERIFIER_* variables) over the runner's `document`, after the
 * operator's policy `file` when there is one. `decided` names the variables this run sets itself;
 * `flags` the settings that came from the command line. Throws one SettingsError listing every
 * setting that cannot be honoured, one line each.
 */
export function withVerifierSettings(
  document: Record<string, unknown>,
  given: Readonly<Record<string, string>>,
  decided: Decided,
  flags: FlagValues = {},
  file?: PolicyFile,
): VerifierSettings {
  const rows = new Map(ENVIRONMENT.map((row) => [row.env, row.path]));
  const problems: string[] = [];
  const env: Record<string, string> = {};
  const issuerFlags = Object.fromEntries(
    Object.entries(flags).map(([name, flag]) => [
      (rows.get(name) ?? '').slice(ISSUER.length),
      flag,
    ]),
  );
  const issuer = String((document.issuers as Array<{ issuer: unknown }>)[0]?.issuer);
  const { document: merged, written } =
    file === undefined
      ? { document: structuredClone(document), written: new Set<string>() }
      : withPolicyFile(structuredClone(document), file, { issuer, flags: issuerFlags }, problems);
  const policies = (merged.policies ?? {}) as Record<string, unknown>;
  for (const [name, value] of Object.entries(given)) {
    const path = rows.get(name);
    if (path === undefined) {
      const renamed = RENAMED[name];
      problems.push(
        renamed === undefined
          ? `${name}: not a verifier setting (docs/configuration.md lists them)`
          : `${name}: the runner's variable is ${renamed} now; the verifier reads only its own settings`,
      );
    } else if (decided[name] !== undefined) {
      problems.push(`${name}: ${decided[name]}`);
    } else if (flags[name] !== undefined && !sameSetting(flags[name].value, value)) {
      problems.push(`${name}: "${value}" contradicts ${flags[name].flag} "${flags[name].value}"`);
    } else if (path.startsWith(ISSUER)) {
      setPath(merged, ['issuers', 0, ...path.slice(ISSUER.length).split('.')], value);
    } else if (path.startsWith(POLICY)) {
      // Every policy of the run, unless the policy file wrote this field for it.
      const field = path.slice(POLICY.length);
      for (const policy of Object.keys(policies).filter((at) => !written.has(`${at}.${field}`)))
        setPath(merged, ['policies', policy, ...field.split('.')], value);
    } else {
      env[name] = value;
    }
  }
  if (problems.length > 0) throw new SettingsError(problems);
  return { document: merged, env };
}

function setPath(target: Record<string, unknown>, keys: Array<string | number>, value: string) {
  const last = keys.pop() as string;
  let at: Record<string | number, unknown> = target;
  for (const key of keys) {
    const next = at[key];
    at = typeof next === 'object' && next !== null ? (next as typeof at) : (at[key] = {});
  }
  at[last] = value;
}

/**
 * The verifier's configuration for one run (`npm start`, with or without --issuer, --production):
 * the runner's document for the dev IdP or the own IdP, with the operator's `variables` laid over
 * it. One function for every runner mode, so each setting takes the same path in all of them.
 */
export function runnerVerifierSettings(run: {
  readonly own: OwnIdp | undefined;
  readonly issuer: string;
  readonly audience: string;
  readonly variables: Readonly<Record<string, string>>;
  /** The operator's policy file (`--config`); VERIFIER_CONFIG names it when this is unset. */
  readonly policyFile?: string | undefined;
  /** Reads the policy file (tests pass their own). */
  readonly read?: (path: string) => string;
}): VerifierSettings {
  const { own, issuer, audience } = run;
  const document =
    own === undefined
      ? (verifierConfig({ issuer, jwksUri: `${issuer}/jwks`, audience }) as Record<string, unknown>)
      : ownIdpVerifierConfig({ ...own, audience });
  const { VERIFIER_CONFIG: named, ...variables } = run.variables;
  const problems: string[] = [];
  if (run.policyFile !== undefined && named !== undefined && named !== run.policyFile)
    problems.push(`VERIFIER_CONFIG: "${named}" contradicts --config "${run.policyFile}"`);
  const path = run.policyFile ?? named;
  const file = path === undefined ? undefined : readPolicyFile(path, problems, run.read);
  if (problems.length > 0) throw new SettingsError(problems);
  return withVerifierSettings(document, variables, ...runnerDecides(own, audience), file);
}

/**
 * The VERIFIER_* settings a run sets itself (and why an operator's cannot apply), and those its
 * command line gave: a variable may repeat a flag, not contradict it.
 */
function runnerDecides(own: OwnIdp | undefined, audience: string): [Decided, FlagValues] {
  const always = {
    VERIFIER_LISTEN:
      'npm start places the verifier itself (--verifier-port; a unix socket with --production)',
  };
  if (own === undefined)
    return [
      {
        ...always,
        VERIFIER_ISSUER:
          'the dev IdP issues the tokens in this run; name your own IdP with --issuer',
        VERIFIER_JWKS_URI: "the dev IdP's key set is used in this run; use it with --issuer",
      },
      { VERIFIER_AUDIENCE: { flag: '--audience', value: audience } },
    ];
  const flags: Record<string, { flag: string; value: string }> = {
    VERIFIER_ISSUER: { flag: '--issuer', value: own.issuer },
    VERIFIER_AUDIENCE: { flag: '--audience', value: audience },
  };
  if (own.jwksUri !== undefined)
    flags.VERIFIER_JWKS_URI = { flag: '--jwks-uri', value: own.jwksUri };
  if (own.preset !== undefined) flags.VERIFIER_PRESET = { flag: '--preset', value: own.preset };
  if (own.logoutAudiences?.length)
    flags.VERIFIER_LOGOUT_AUDIENCES = {
      flag: '--logout-audience',
      value: own.logoutAudiences.join(','),
    };
  return [always, flags];
}

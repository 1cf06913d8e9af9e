// The operator's VERIFIER_* variables in a run the runner configures (`npm start`, with or without
// --issuer or --production): the runner writes the verifier's JSON file, and each variable reaches
// the verifier with the precedence the verifier itself applies (variables win over the file).
// Top-level settings are passed through as variables, which the verifier lays over the file;
// issuer and policy settings, which the verifier takes only from the file once VERIFIER_CONFIG is
// set, are written into the file's one issuer and its `secret` policy. What a run cannot honour
// (where the verifier listens, a second configuration file, an issuer the run does not use) stops
// the start with one line that says why.
import { ENVIRONMENT } from '../verifier/src/config/load.js';
import { ownIdpVerifierConfig, verifierConfig } from './service-env.js';
import type { OwnIdp } from './stack.js';

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
 * Lays `given` (the operator's VERIFIER_* variables) over the runner's `document`. `decided`
 * names the variables this run sets itself; `flags` the settings that came from the command line.
 * Throws one Error listing every variable that cannot be honoured, one line each.
 */
export function withVerifierSettings(
  document: Record<string, unknown>,
  given: Readonly<Record<string, string>>,
  decided: Decided,
  flags: FlagValues = {},
): VerifierSettings {
  const rows = new Map(ENVIRONMENT.map((row) => [row.env, row.path]));
  const problems: string[] = [];
  const env: Record<string, string> = {};
  const merged = structuredClone(document);
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
      setPath(merged, ['policies', 'secret', ...path.slice(POLICY.length).split('.')], value);
    } else {
      env[name] = value;
    }
  }
  if (problems.length > 0) throw new Error(problems.join('\n'));
  return { document: merged, env };
}

/** Lists compare as lists (`a,b` = `a b`), everything else as text. */
function sameSetting(flag: string, variable: string): boolean {
  const items = (text: string) =>
    text
      .split(/[\s,]+/)
      .filter(Boolean)
      .join(',');
  return items(flag) === items(variable);
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
}): VerifierSettings {
  const { own, issuer, audience } = run;
  const document =
    own === undefined
      ? (verifierConfig({ issuer, jwksUri: `${issuer}/jwks`, audience }) as Record<string, unknown>)
      : ownIdpVerifierConfig({ ...own, audience });
  return withVerifierSettings(document, run.variables, ...runnerDecides(own, audience));
}

/**
 * The VERIFIER_* settings a run sets itself (and why an operator's cannot apply), and those its
 * command line gave: a variable may repeat a flag, not contradict it.
 */
function runnerDecides(own: OwnIdp | undefined, audience: string): [Decided, FlagValues] {
  const always = {
    VERIFIER_CONFIG:
      'npm start writes the verifier configuration itself; give single settings as VERIFIER_* variables, or run the verifier alone with your file',
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

// The verifier's configuration checked by the runner before anything starts: the verifier's own
// loader (verifier/src/config/load.ts) over the document the run wrote, so a bad policy file or
// variable stops `npm start` with one line per problem (exit 2) while nothing listens yet.
import { ConfigError, loadConfig } from '../verifier/src/config/load.js';
import type { VerifierConfig } from '../verifier/src/config/model.js';
import { SettingsError } from './verifier-settings.js';

/** The policies NGINX asks for without a set name: `/secret`, and a /verify with no policy. */
const UNNAMED = new Set(['secret', 'default']);

/** What NGINX and the SPA take from the verifier's policies. */
export interface PolicyFacts {
  /** The named sets (`/secret/<name>`): every policy but `secret` and `default`. */
  readonly setNames: readonly string[];
  /** Every policy requires DPoP: the protected-resource metadata says so (RFC 9728). */
  readonly dpopRequired: boolean;
  /** The revocation receivers the verifier switches on (`/backchannel-logout`, `/ssf/events`). */
  readonly receivers: readonly string[];
  /**
   * The verifier's `reload` settings (seconds): the runner reads the operator's policy file at
   * the verifier's pace, so the bound the docs give holds for both.
   */
  readonly pace: { readonly poll: number; readonly settle: number };
}

/**
 * Throws a SettingsError listing every problem of the verifier's configuration under `env`; a
 * problem in the file the run wrote is named by its place in the operator's `policyFile` when
 * there is one.
 */
export function checkVerifierConfig(
  env: Readonly<Record<string, string>>,
  policyFile: string | undefined,
  read?: (path: string) => string,
): PolicyFacts {
  let config: VerifierConfig;
  try {
    config = loadConfig(env, read);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const source = policyFile ?? 'the verifier configuration of this run';
    throw new SettingsError(
      error.problems.map((problem) =>
        problem.startsWith('config.') ? `${source}: ${problem.slice('config.'.length)}` : problem,
      ),
    );
  }
  const policies = [...config.policies.values()];
  return {
    setNames: policies.map(({ name }) => name).filter((name) => !UNNAMED.has(name)),
    dpopRequired: policies.every((policy) => policy.dpop === 'required'),
    receivers: [
      ...([...config.issuers.values()].some((i) => i.type === 'jwt' && i.logoutAudiences.length)
        ? ['/backchannel-logout']
        : []),
      ...(config.revocation.ssf.transmitter !== undefined && config.revocation.ssf.push
        ? ['/ssf/events']
        : []),
    ],
    pace: config.reload,
  };
}

/**
 * The secrets file's named sets (`policies`) against the verifier's named policies: a set with no
 * policy could never be served (NGINX 404s its name), a policy with no set answers 503 to every
 * caller it allows. Throws one line per name, naming both sources. `strict.sets`: the operator
 * gave the secrets file (the built-in dev file may hold sets an own IdP's run does not serve);
 * `strict.policies`: the operator gave the policies (the dev run's own `payments` may go without).
 */
export function checkSetsMatch(
  secretsFile: string,
  secrets: unknown,
  facts: Pick<PolicyFacts, 'setNames'>,
  source: string,
  strict: { readonly sets: boolean; readonly policies: boolean },
): void {
  const policies = (secrets as { policies?: unknown } | undefined)?.policies;
  const sets = typeof policies === 'object' && policies !== null ? Object.keys(policies) : [];
  const problems = [
    ...(strict.policies ? facts.setNames : [])
      .filter((name) => !sets.includes(name))
      .map(
        (name) =>
          `policy "${name}" (${source}) has no set in ${secretsFile}: add "policies": { "${name}": … } there, or remove the policy`,
      ),
    ...(strict.sets ? sets : [])
      .filter((name) => !facts.setNames.includes(name))
      .map(
        (name) =>
          `set "${name}" in ${secretsFile} has no policy in ${source}: add policies.${name} there (npm start -- --config FILE), or remove the set`,
      ),
  ];
  if (problems.length > 0) throw new SettingsError(problems);
}

// The operator's policy file in a run the runner configures (`npm start -- --config FILE`, or
// VERIFIER_CONFIG): a verifier configuration document (docs/configuration.md) whose policies
// replace the run's own and whose issuers and top-level settings join the run's, so any number of
// named sets, each with its step-up, DPoP, clients and scopes, runs the same with the dev IdP and
// with `--issuer`. What the file cannot say in a run (where the verifier listens, an issuer setting
// the command line gave otherwise) is one problem line each.
import { readFileSync } from 'node:fs';

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export interface PolicyFile {
  /** As the operator named it: every problem line starts with it. */
  readonly path: string;
  readonly document: Json;
}

/** A setting the command line gave: the file may repeat it, never contradict it. */
export type IssuerFlags = Readonly<
  Record<string, { readonly flag: string; readonly value: string }>
>;

/** The policy file as a JSON object; one line in `problems` when it cannot be one. */
export function readPolicyFile(
  path: string,
  problems: string[],
  read: (path: string) => string = (at) => readFileSync(at, 'utf8'),
): PolicyFile | undefined {
  let document: unknown;
  try {
    document = JSON.parse(read(path));
  } catch (error) {
    const why = (error as Error).message;
    problems.push(
      error instanceof SyntaxError
        ? `${path}: not valid JSON (${why})`
        : `${path}: cannot be read (${why})`,
    );
    return undefined;
  }
  if (isObject(document)) return { path, document };
  problems.push(`${path}: must hold a JSON object ({ "policies": { … } })`);
  return undefined;
}

/**
 * `runner` (the run's document: its one issuer first, its policies) with `file` laid over it:
 * the file's `policies` replace the run's (a policy without `issuers` takes the run's issuer),
 * an issuer of the file with the run's `iss` adds to the run's issuer (`flags`, issuer fields by
 * name, may not be contradicted), other issuers are added, top-level settings taken as written.
 * `written` holds `name.field` for every policy field the file sets: an operator variable does
 * not override those.
 */
export function withPolicyFile(
  runner: Json,
  file: PolicyFile,
  run: { readonly issuer: string; readonly flags: IssuerFlags },
  problems: string[],
): { document: Json; written: ReadonlySet<string> } {
  const { issuers: fileIssuers, policies: filePolicies, ...settings } = file.document;
  const say = (at: string, message: string) => problems.push(`${file.path}: ${at}: ${message}`);
  if ('listen' in settings)
    say(
      'listen',
      'npm start places the verifier itself (--verifier-port; a unix socket otherwise)',
    );
  const runIssuers = Array.isArray(runner.issuers) ? (runner.issuers as Json[]) : [];
  const issuers = runIssuers.map((issuer) => ({ ...issuer }));
  if (fileIssuers !== undefined && !Array.isArray(fileIssuers))
    say('issuers', 'must be an array of issuers');
  (Array.isArray(fileIssuers) ? (fileIssuers as unknown[]) : []).forEach((issuer, index) => {
    if (!isObject(issuer) || issuer.issuer !== run.issuer) return void issuers.push(issuer as Json);
    for (const [field, { flag, value }] of Object.entries(run.flags)) {
      const written = issuer[field];
      if (written !== undefined && !sameSetting(flagText(written), value))
        say(`issuers[${index}].${field}`, `"${flagText(written)}" contradicts ${flag} "${value}"`);
    }
    Object.assign(issuers[0] ?? {}, issuer);
  });
  const written = new Set<string>();
  let policies = runner.policies;
  if (filePolicies !== undefined) {
    if (!isObject(filePolicies)) say('policies', 'must be an object of named policies');
    else
      policies = Object.fromEntries(
        Object.entries(filePolicies).map(([name, policy]) => {
          if (!isObject(policy)) return [name, policy];
          for (const field of Object.keys(policy)) written.add(`${name}.${field}`);
          return [name, { issuers: [run.issuer], ...policy }];
        }),
      );
  }
  return { document: { ...runner, ...settings, issuers, policies }, written };
}

/** A flag's value as text: a list as `a,b`. */
const flagText = (value: unknown) =>
  Array.isArray(value)
    ? value.join(',')
    : typeof value === 'string'
      ? value
      : JSON.stringify(value);

/** Lists compare as lists (`a,b` = `a b`), everything else as text. */
export function sameSetting(flag: string, variable: string): boolean {
  const items = (text: string) =>
    text
      .split(/[\s,]+/)
      .filter(Boolean)
      .join(',');
  return items(flag) === items(variable);
}

// How a configuration problem is said: at the setting the operator wrote (`VERIFIER_LISTEN`,
// `config.issuers[0].audience`), with a rule's other settings named the same way, every secret
// value redacted, and a rule's problem about one issuer or policy said beside that section's own.
import type { z } from 'zod';
import { ENVIRONMENT } from './env.js';
import { redact } from './redact.js';

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

/** `issuers` + 0 → `issuers[0]`, `jwks` + `refresh` → `jwks.refresh`. */
export const join = (at: string, key: PropertyKey) =>
  typeof key === 'number' ? `${at}[${key}]` : at === '' ? String(key) : `${at}.${String(key)}`;

const sectionOf = (kind: PropertyKey | undefined, key: PropertyKey | undefined) =>
  key !== undefined && (kind === 'issuers' || kind === 'policies') ? join(kind, key) : undefined;

/**
 * The loader's problem list: `check` parses one section at `at` with its schema and says each
 * issue (unknown fields first: a misspelt name explains the "missing" value after it); `flush`
 * says what is still held; `all` is the list, each problem once.
 */
export function createProblems(label: (path: string) => string, singleIssuer: boolean) {
  const problems: string[] = [];
  // A setting a message names: as the operator wrote it, else by its variable.
  const nameOf = (path: string) =>
    (label(path) === path && ENVIRONMENT.find((row) => row.path === path)?.env) || label(path);
  const held = new Map<string, string[]>();
  const sayHeld = (section: string) => {
    problems.push(...(held.get(section) ?? []));
    held.delete(section);
  };
  return {
    add: (...lines: readonly string[]) => problems.push(...lines),
    report: (path: string, message: string) => problems.push(`${label(path)}: ${message}`),
    check<T>(schema: z.ZodType<T>, value: unknown, at: string): T | undefined {
      const result = schema.safeParse(value, { reportInput: true });
      const issues = (result.error?.issues ?? []).sort(
        (a, b) => Number(b.code === 'unrecognized_keys') - Number(a.code === 'unrecognized_keys'),
      );
      for (const issue of issues) {
        const name = label(issue.path.reduce<string>(join, at));
        const missing = singleIssuer && issue.input === undefined && name.startsWith('VERIFIER_');
        // A rule names other settings by path (rules.ts), said as the operator wrote them.
        const names =
          issue.code === 'custom' ? (issue.params?.names as string[] | undefined) : undefined;
        const message = issue.message.replace(/\{(\d+)\}/g, (_, index: string) =>
          nameOf((names?.[Number(index)] ?? '').split('.').reduce(join, at)),
        );
        const line = `${name}: ${missing ? 'required with VERIFIER_ISSUER' : message}`;
        const section =
          at === '' && names !== undefined ? sectionOf(issue.path[0], issue.path[1]) : undefined;
        if (section === undefined) problems.push(line);
        else held.set(section, [...(held.get(section) ?? []), line]);
      }
      if (at !== '') sayHeld(at);
      return result.data;
    },
    flush() {
      for (const section of held.keys()) sayHeld(section);
    },
    all: (): readonly string[] => [...new Set(problems)],
  };
}

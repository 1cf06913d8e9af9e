import { describe, expect, it } from 'vitest';
import policyNames from './policy-names.js';

const FILES = { policyFile: 'verifier.json', secretsFile: 'secrets.json' };
const document = (names: string[]) =>
  JSON.stringify({ policies: Object.fromEntries(names.map((name) => [name, {}])) });
const secrets = (names: string[]) => ({
  default: {},
  policies: Object.fromEntries(names.map((name) => [name, { default: { k: 'v' } }])),
});

describe("the named sets of the verifier's policy file", () => {
  it('are its policies other than `secret` and `default`, in the order of the file', () => {
    expect(
      policyNames.namesOf(document(['secret', 'payments', 'default', 'audit-log']), 'f'),
    ).toEqual({ names: ['payments', 'audit-log'] });
    expect(policyNames.namesOf(document(['secret']), 'f')).toEqual({ names: [] });
  });

  it.each([
    ['not JSON', '{"policies":', 'policy file f is not JSON'],
    ['no policies', '{"issuers":[]}', 'policy file f has no "policies" object'],
    ['policies not an object', '{"policies":[]}', 'policy file f has no "policies" object'],
    [
      'a name with a capital',
      document(['secret', 'Payments']),
      'policy "Payments" in f is not a name /secret/<name> can serve (a-z, then a-z 0-9 -, at most 32)',
    ],
    ['a name of 33 characters', document(['a'.repeat(33)]), `policy "${'a'.repeat(33)}" in f`],
  ])('are refused for %s', (_title, text, problem) => {
    const result = policyNames.namesOf(text, 'f');
    expect('problem' in result && result.problem).toContain(problem);
  });
});

describe('the names against the secrets file', () => {
  it('agree when both name the same sets, in any order', () => {
    expect(
      policyNames.mismatch(['a', 'b'], secrets(['b', 'a']), undefined, '', FILES),
    ).toBeUndefined();
  });

  it('name every policy without a set and every set without a policy, and both files', () => {
    expect(policyNames.mismatch(['a', 'b'], secrets(['b', 'c']), undefined, '', FILES)).toBe(
      'policy "a" has no set in the secrets file secrets.json, set "c" in the secrets file has no policy in verifier.json (the policy file verifier.json and the secrets file secrets.json must name the same sets)',
    );
  });

  it('are not compared with the flat SECRETS (it holds no named sets) nor with a secrets file that cannot be served', () => {
    expect(policyNames.mismatch(['a'], undefined, '{"k":"v"}', '', FILES)).toBeUndefined();
    expect(policyNames.mismatch(['a'], 'not an object', undefined, '', FILES)).toBeUndefined();
  });

  it('never quote a value of the secrets file', () => {
    const problem = policyNames.mismatch(['a'], secrets(['b']), undefined, '', FILES) ?? '';
    expect(problem).not.toContain('"v"');
  });
});

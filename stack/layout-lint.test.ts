// The folder rule of eslint.config.js, shown to bite: an outward import in a verifier folder is a
// lint error with the message that names the rule, and the inward one beside it passes.
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const eslint = new ESLint({ cwd: root });

/** The restricted-import messages for `code` linted as if it were the file at `path`. */
async function restricted(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: `${root}${path}` });
  return (result?.messages ?? [])
    .filter((message) => message.ruleId === 'no-restricted-imports')
    .map((message) => message.message);
}

describe('verifier folders: arrows point inward (eslint.config.js)', { timeout: 120_000 }, () => {
  it.each([
    ['token/ importing decision/', 'verifier/src/token/token-shape.ts', '../decision/decision.js'],
    [
      'token/ importing a plugin',
      'verifier/src/token/token-shape.ts',
      '../revocation/watermarks.js',
    ],
    ['decision/ importing http/', 'verifier/src/decision/decision.ts', '../http/transport.js'],
    ['decision/ importing a plugin', 'verifier/src/decision/decision.ts', '../cloudfront/grant.js'],
    ['http/ importing a plugin', 'verifier/src/http/contract.ts', '../dpop/challenge.js'],
    ['a plugin importing http/', 'verifier/src/revocation/watermarks.ts', '../http/transport.js'],
    ['config/ importing token/', 'verifier/src/config/values.ts', '../token/identity.js'],
    ['a folder importing the composition root', 'verifier/src/dpop/htu.ts', '../service.js'],
    ['the probe importing a plugin', 'verifier/src/probe.ts', './cloudfront/grant.js'],
  ])('refuses %s', async (_title, path, target) => {
    const messages = await restricted(path, `export type { X } from '${target}';\n`);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatch(/arrows point inward|composition root|import no decision/);
  });

  it('lets a plugin import the core it implements', async () => {
    const code = "export type { Grant } from '../decision/decision.js';\n";
    expect(await restricted('verifier/src/cloudfront/grant.ts', code)).toEqual([]);
  });
});

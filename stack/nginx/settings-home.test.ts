// Every SG_ setting has one home: its default is written in nginx/settings.env and nowhere else
// among the product and its runners (nginx/, deploy/, the compose files, stack/). Images,
// manifests and runners set only what differs; the docs table is generated from the file.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { nginxPaths, nginxVariables, readNginxSettings } from './variables.js';

const repoRoot = path.resolve(nginxPaths.templatesDir, '..', '..');

function filesUnder(dir: string): string[] {
  return readdirSync(path.join(repoRoot, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && !entry.name.endsWith('.test.ts'))
    .map((entry) => path.relative(repoRoot, path.join(entry.parentPath, entry.name)));
}

const scanned = [
  ...filesUnder('nginx'),
  ...filesUnder('deploy'),
  ...filesUnder('stack'),
  ...readdirSync(repoRoot).filter((name) => /^docker-compose.*\.ya?ml$/.test(name)),
];

/**
 * Whether `line` gives `name` the value `value`: an assignment (`NAME=value`, `NAME: 'value'`,
 * `NAME: options.x ?? 'value'`) or a shell fallback (`${NAME:-value}`).
 */
function assigns(line: string, name: string, value: string): boolean {
  const fallback = new RegExp(`\\$\\{${name}:?-([^}]*)\\}`).exec(line);
  if (fallback && value !== '' && fallback[1] === value) return true;
  const assignment = new RegExp(`(?<![\\w$])${name}\\s*[=:]\\s*(.*)$`).exec(line);
  if (!assignment) return false;
  const rhs = (assignment[1] ?? '').trim().replace(/,$/, '');
  if (rhs.replace(/^(['"])(.*)\1$/, '$2') === value) return true;
  return value !== '' && (rhs.includes(`'${value}'`) || rhs.includes(`"${value}"`));
}

describe('the home of every NGINX setting', () => {
  it('is nginx/settings.env: one line per SG_ setting, each with its meaning above it', () => {
    const settings = readNginxSettings();
    expect(settings.map((s) => s.name)).toEqual(nginxVariables.map((v) => v.name));
    expect(new Set(settings.map((s) => s.name)).size).toBe(settings.length);
    for (const { name, description } of settings) expect(description, name).not.toBe('');
  });

  it.each(nginxVariables.map((v) => [v.name, v.default] as const))(
    'writes the default of %s (%j) in that one file only',
    (name, value) => {
      const homes = scanned.filter((file) =>
        readFileSync(path.join(repoRoot, file), 'utf8')
          .split('\n')
          .some((line) => assigns(line, name, value)),
      );
      expect(homes).toEqual(['nginx/settings.env']);
    },
  );
});

// A small reader for rendered NGINX configuration: enough of its grammar (words, quoted strings,
// `;`, blocks, `include` with globs) to list every `location` and the directives inside it.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

export interface Directive {
  readonly name: string;
  readonly args: readonly string[];
  readonly block: readonly Directive[] | undefined;
  readonly file: string;
}

export interface Location {
  /** Modifier (`=`, `^~`, `~`, `~*`, `@name` has none) and path as written. */
  readonly modifier: string | undefined;
  readonly path: string;
  /** Directives inside, includes expanded. */
  readonly body: readonly Directive[];
}

/** Parses `file` and every file it includes (relative paths resolve against `confDir`). */
export function readConfig(file: string, confDir = dirname(file)): Directive[] {
  return expand(parse(tokenize(readFileSync(file, 'utf8')), file), confDir);
}

/** Every `location` block, nested ones included, in file order. */
export function listLocations(directives: readonly Directive[]): Location[] {
  const found: Location[] = [];
  for (const directive of directives) {
    if (directive.name === 'location' && directive.block) {
      const [first = '', second] = directive.args;
      found.push(
        second === undefined
          ? { modifier: undefined, path: first, body: directive.block }
          : { modifier: first, path: second, body: directive.block },
      );
    }
    if (directive.block) found.push(...listLocations(directive.block));
  }
  return found;
}

/** Whether a location (or a directive it includes) carries `auth_request`. */
export function hasAuthRequest(location: Location): boolean {
  return location.body.some(
    (directive) => directive.name === 'auth_request' && directive.args[0] !== 'off',
  );
}

/**
 * Whether a request URI (normalised, as NGINX matches it) falls in `location` on its own: exact,
 * prefix or regular expression (NGINX's PCRE syntax is JavaScript's for the patterns here).
 * Not which location wins among several.
 */
export function locationMatches(location: Location, uri: string): boolean {
  switch (location.modifier) {
    case '=':
      return uri === location.path;
    case '~':
      return new RegExp(location.path).test(uri);
    case '~*':
      return new RegExp(location.path, 'i').test(uri);
    default:
      return uri.startsWith(location.path);
  }
}

function tokenize(text: string): string[] {
  const tokens: string[] = [];
  const pattern = /#[^\n]*|"((?:\\.|[^"\\])*)"|'((?:\\.|[^'\\])*)'|([{};])|([^\s{};"'#]+)/g;
  for (const match of text.matchAll(pattern)) {
    if (match[0].startsWith('#')) continue;
    tokens.push(match[1] ?? match[2] ?? match[3] ?? match[4] ?? '');
  }
  return tokens;
}

function parse(tokens: string[], file: string): Directive[] {
  let index = 0;
  function block(): Directive[] {
    const directives: Directive[] = [];
    while (index < tokens.length) {
      const name = tokens[index++] as string;
      if (name === '}') return directives;
      const args: string[] = [];
      while (index < tokens.length && tokens[index] !== ';' && tokens[index] !== '{')
        args.push(tokens[index++] as string);
      const end = tokens[index++];
      directives.push({ name, args, block: end === '{' ? block() : undefined, file });
    }
    return directives;
  }
  return block();
}

function expand(directives: readonly Directive[], confDir: string): Directive[] {
  const out: Directive[] = [];
  for (const directive of directives) {
    if (directive.name === 'include') {
      for (const path of globFiles(resolve(confDir, directive.args[0] ?? '')))
        out.push(...readConfig(path, confDir));
    } else if (directive.block) {
      out.push({ ...directive, block: expand(directive.block, confDir) });
    } else {
      out.push(directive);
    }
  }
  return out;
}

function globFiles(pattern: string): string[] {
  if (!pattern.includes('*')) return [pattern];
  const dir = dirname(pattern);
  const re = new RegExp(
    `^${pattern
      .slice(dir.length + 1)
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')}$`,
  );
  return readdirSync(dir)
    .filter((name) => re.test(name))
    .sort()
    .map((name) => join(dir, name));
}

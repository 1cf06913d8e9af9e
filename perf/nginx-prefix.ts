// Renders an NGINX config template into a private prefix directory, so every run starts a fresh,
// unprivileged NGINX whose pid, logs and temp files stay out of /var and /etc.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Replaces every `{{NAME}}` in `template`; a placeholder without a value is a programmer error. */
export function renderTemplate(template: string, values: Readonly<Record<string, string>>): string {
  return template.replace(/\{\{([A-Z_]+)\}\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new TypeError(`template placeholder "${name}" has no value`);
    return value;
  });
}

export interface NginxPrefix {
  readonly dir: string;
  readonly confPath: string;
  /** Arguments for `nginx`: run in the foreground from this prefix. */
  readonly args: readonly string[];
}

/**
 * Creates `dir` with `conf/nginx.conf` rendered from `templatePath` plus the temp directories the
 * config names. `PREFIX` is always supplied; other placeholders come from `values`.
 */
export function prepareNginxPrefix(
  dir: string,
  templatePath: string,
  values: Readonly<Record<string, string>>,
): NginxPrefix {
  for (const sub of ['conf', 'tmp/body', 'tmp/proxy', 'tmp/fastcgi', 'tmp/uwsgi', 'tmp/scgi']) {
    mkdirSync(join(dir, sub), { recursive: true });
  }
  const confPath = join(dir, 'conf', 'nginx.conf');
  const rendered = renderTemplate(readFileSync(templatePath, 'utf8'), { ...values, PREFIX: dir });
  writeFileSync(confPath, rendered);
  return { dir, confPath, args: ['-p', dir, '-c', confPath, '-e', join(dir, 'error.log')] };
}

// Redaction by setting, not by name: every value a secret setting loads (a `secret()` value, the
// content of a `secretFile()` such as `edgeKeyFile`) is remembered as it is read, and `redact`
// takes those values and every URL's userinfo (single-host, Sentinel and Cluster forms alike,
// which `URL` cannot parse) out of any text before it leaves the process: `--print-config`,
// `--check-config`, configuration errors and log lines (log.ts).

export const REDACTED = '[redacted]';

/** Secret values as loaded, and as JSON writes them inside a string (quotes, backslashes). */
const secrets = new Set<string>();
/** Shorter values are redacted where they are a whole setting, not searched for inside text. */
const MIN_SEARCHED = 4;

/** Remembers `value` as a secret of the configuration; returns it. */
export function rememberSecret(value: string): string {
  if (value === '') return value;
  secrets.add(value);
  secrets.add(JSON.stringify(value).slice(1, -1));
  return value;
}

/** Whether `value` is, as a whole, one a secret setting loaded. */
export const isSecret = (value: string): boolean => secrets.has(value);

// `scheme://userinfo@`: the userinfo ends at the last `@` before the path, whatever the hosts.
const USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#"<>]*@/gi;

/** `text` with every URL's userinfo and every remembered secret replaced by `[redacted]`. */
export function redact(text: string): string {
  let out = text.replace(USERINFO, `$1${REDACTED}@`);
  for (const secret of secrets)
    if (secret.length >= MIN_SEARCHED && out.includes(secret))
      out = out.replaceAll(secret, REDACTED);
  return out;
}

// `--print-config`: the configuration the verifier would run with, as JSON, after every source
// (file, variables, presets, defaults) is applied — what an operator reads to see that a setting
// took effect. Every value a secret setting loaded is redacted by setting (redact.ts), names that
// hold a credential besides (passwords, secrets, tokens, keys), and every URL loses its userinfo;
// everything else is printed as the verifier holds it.
import type { VerifierConfig } from './model.js';
import { isSecret, redact, REDACTED } from './redact.js';

/** Settings that hold a credential: `password`, `clientSecret`, `pollToken`, `nonceKey`… */
const SECRET_NAME = /password|secret|token$|key$/i;

/**
 * The effective configuration as indented JSON, secrets redacted; with `sources`, a `$sources`
 * member says where each explicitly given setting came from (sources.ts).
 */
export function printableConfig(
  config: VerifierConfig,
  sources?: Readonly<Record<string, string>>,
): string {
  const shown =
    sources === undefined
      ? printable(config)
      : { ...(printable(config) as object), $sources: sources };
  return redact(`${JSON.stringify(shown, null, 2)}\n`);
}

function printable(value: unknown, name = ''): unknown {
  if (value instanceof Map)
    return Object.fromEntries([...value].map(([key, item]) => [key, printable(item, String(key))]));
  if (Array.isArray(value)) return value.map((item) => printable(item, name));
  if (typeof value === 'string') {
    return SECRET_NAME.test(name) || isSecret(value) ? REDACTED : value;
  }
  if (typeof value !== 'object' || value === null) return value;
  // A loaded key (KeyObject, CryptoKey) or buffer is a secret whatever its name.
  if (Object.getPrototypeOf(value) !== Object.prototype) return REDACTED;
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [key, printable(item, key)]),
  );
}

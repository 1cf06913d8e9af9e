// `--print-config`: the configuration the verifier would run with, as JSON, after every source
// (file, variables, presets, defaults) is applied — what an operator reads to see that a setting
// took effect. Secrets are redacted by name (passwords, secrets, tokens, keys) and a store URL
// loses its credentials; everything else is printed as the verifier holds it.
import type { VerifierConfig } from './model.js';

const REDACTED = '[redacted]';
/** Settings that hold a credential: `password`, `clientSecret`, `pollToken`, `nonceKey`… */
const SECRET_NAME = /password|secret|token$|key$/i;

/** The effective configuration as indented JSON, secrets redacted. */
export function printableConfig(config: VerifierConfig): string {
  return `${JSON.stringify(printable(config), null, 2)}\n`;
}

function printable(value: unknown, name = ''): unknown {
  if (value instanceof Map)
    return Object.fromEntries([...value].map(([key, item]) => [key, printable(item, String(key))]));
  if (Array.isArray(value)) return value.map((item) => printable(item, name));
  if (typeof value === 'string') {
    if (SECRET_NAME.test(name)) return REDACTED;
    return withoutCredentials(value);
  }
  if (typeof value !== 'object' || value === null) return value;
  // A loaded key (KeyObject, CryptoKey) or buffer is a secret whatever its name.
  if (Object.getPrototypeOf(value) !== Object.prototype) return REDACTED;
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [key, printable(item, key)]),
  );
}

/** `rediss://user:pass@host` → `rediss://[redacted]@host`; other text as it is. */
function withoutCredentials(text: string): string {
  const url = URL.parse(text);
  if (url === null || (url.username === '' && url.password === '')) return text;
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^@/]*@/i, `$1${REDACTED}@`);
}

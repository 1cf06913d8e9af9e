// The body of `GET /secret[/name]`: ONE JSON object of the set's values by name (strings) and,
// when some are minted per user, `"expires_at": { "<name>": <epoch seconds> }`. Read strictly:
// anything else is not a set, and an expiry must name a value the body carries.

/** The answer's member that carries the minted values' expiries; never a value itself. */
export const EXPIRES_AT = 'expires_at';

export interface SetBody {
  /** The values by name, `expires_at` left out. */
  readonly values: Readonly<Record<string, string>>;
  /** Expiry (epoch seconds, the gate's clock) of each minted value; empty for a static set. */
  readonly expiresAt: Readonly<Record<string, number>>;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Reads a parsed JSON body into values and expiries, or undefined when it is not a set: a value
 * that is not a string (numbers are read as text, as older sets hold them), an `expires_at` that
 * is not an object of positive finite numbers, or one naming a value the body lacks.
 */
export function readSetBody(body: unknown): SetBody | undefined {
  if (!isRecord(body)) return undefined;
  const values: Record<string, string> = Object.create(null) as Record<string, string>;
  const expiresAt: Record<string, number> = Object.create(null) as Record<string, number>;
  for (const [name, value] of Object.entries(body)) {
    if (name === EXPIRES_AT) continue;
    if (typeof value === 'string') values[name] = value;
    else if (typeof value === 'number' && Number.isFinite(value)) values[name] = String(value);
    else return undefined;
  }
  const expiries = body[EXPIRES_AT];
  if (expiries !== undefined) {
    if (!isRecord(expiries)) return undefined;
    for (const [name, at] of Object.entries(expiries)) {
      if (typeof at !== 'number' || !Number.isFinite(at) || at <= 0) return undefined;
      if (!(name in values)) return undefined;
      expiresAt[name] = at;
    }
  }
  return { values: { ...values }, expiresAt: { ...expiresAt } };
}

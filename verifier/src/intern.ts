// Shares equal values between cached decisions. 100,000 cached tokens usually carry a handful of
// distinct client ids, scope sets and issuers; storing one copy of each (and of the header pairs
// built from them) is what keeps a full cache well inside its memory budget.

/** A bounded memo: once `max` distinct keys are held, new values are returned unshared. */
export function createInterner<T>(max: number): (key: string, make: () => T) => T {
  const values = new Map<string, T>();
  return (key, make) => {
    const known = values.get(key);
    if (known !== undefined) return known;
    const value = make();
    if (values.size < max) values.set(key, value);
    return value;
  };
}

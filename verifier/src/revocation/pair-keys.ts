// Strings made from a pair of values, each made once: a receiver flooded with junk asks for the same
// few keys on every push, and a string concatenated per push would be hashed again by the map it
// keys (the failure budget's, the log throttle's).

/** `join(a, b)` for each pair, built the first time and returned as the same string after. */
export function pairKeys<A, B>(join: (a: A, b: B) => string): (a: A, b: B) => string {
  const made = new Map<A, Map<B, string>>();
  return (a, b) => {
    let byB = made.get(a);
    if (byB === undefined) made.set(a, (byB = new Map<B, string>()));
    let key = byB.get(b);
    if (key === undefined) byB.set(b, (key = join(a, b)));
    return key;
  };
}

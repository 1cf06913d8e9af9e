// The start-time line that says when NGINX cannot tell a revocation sender's address from a
// browser's: its flood cap on the receivers (per address, tunables.conf) is then shared with
// everyone at that address. The verifier never keys a push on the address (docs/revocation.md,
// "Junk and real logouts"), so a real logout is not lost to junk; the line says what is shared.

/**
 * The warning for a local run, or undefined. A local run's NGINX listens on loopback, so every
 * push reaches it from this host (the dev IdP, a tunnel or a proxy): with `SG_REAL_IP_FROM` at
 * `unix:` (no forwarded address trusted), or with the dev IdP (which sends no forwarded address),
 * the sender's address is 127.0.0.1, the browsers' too.
 */
export function receiverAddressWarning(run: {
  /** The receivers the verifier switched on. */
  readonly receivers: readonly string[];
  /** The dev IdP pushes the logouts (no own IdP). */
  readonly devIdp: boolean;
  /** NGINX's SG_REAL_IP_FROM. */
  readonly realIpFrom: string | undefined;
}): string | undefined {
  if (run.receivers.length === 0) return undefined;
  const why = run.devIdp
    ? 'the dev IdP pushes from 127.0.0.1, as every browser of this run connects'
    : run.realIpFrom === undefined || run.realIpFrom === 'unix:'
      ? 'SG_REAL_IP_FROM is unix:, so every push and every browser has the address of the host, tunnel or proxy NGINX sees'
      : undefined;
  if (why === undefined) return undefined;
  return `revocation receivers (${run.receivers.join(', ')}) on, but the client address cannot be the sender's: ${why}. NGINX's per-address flood cap on pushes is shared with them (the verifier never refuses a push by address: docs/revocation.md)`;
}

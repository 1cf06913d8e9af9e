// A listen address (`host:port`, `[v6]:port`, `:port`, `unix:/path`), parsed without the schema
// library so the health probe, which starts a process per check, loads nothing else.

/** Where the verifier listens unless told otherwise (the probe reads it too). */
export const DEFAULT_LISTEN = '127.0.0.1:8090';

export type Listen =
  | { readonly kind: 'unix'; readonly path: string }
  | { readonly kind: 'tcp'; readonly host: string; readonly port: number };

const TCP = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/;
export const LISTEN_EXPECTED = 'host:port or unix:/path';

/** The address, or the problem with `value` in the words the configuration's problems use. */
export function parseListen(value: string): Listen | { readonly problem: string } {
  if (value.startsWith('unix:')) {
    const path = value.slice('unix:'.length);
    if (!path.startsWith('/'))
      return { problem: `unix socket path must be absolute, got "${path}"` };
    return { kind: 'unix', path };
  }
  const [, v6, host, port] = TCP.exec(value) ?? [];
  if (port === undefined || Number(port) < 1 || Number(port) > 65535)
    return { problem: `expected ${LISTEN_EXPECTED}, got ${JSON.stringify(value)}` };
  return { kind: 'tcp', host: v6 ?? (host || '127.0.0.1'), port: Number(port) };
}

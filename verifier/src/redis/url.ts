// The URL forms of the shared Redis (or Valkey) both stores use, parsed without a client so the
// configuration schema can check them: one node, a primary found through Sentinel, or a Cluster.
//   redis://[user:pass@]host[:port][/db]                 rediss://… with TLS
//   redis+sentinel://[user:pass@]h1:p1,h2:p2/MASTER      rediss+sentinel://…
//   redis+cluster://[user:pass@]h1:p1,h2:p2              rediss+cluster://…

export type Topology = 'single' | 'sentinel' | 'cluster';

export interface RedisTarget {
  readonly topology: Topology;
  readonly tls: boolean;
  /** The node (single), the sentinels, or the cluster's seed nodes. */
  readonly hosts: readonly { readonly host: string; readonly port: number }[];
  /** The primary's name that the sentinels know (Sentinel only). */
  readonly masterName: string | undefined;
  readonly db: number;
  /** ACL user name and password written in the URL (settings of their own win over them). */
  readonly username: string | undefined;
  readonly password: string | undefined;
}

const SCHEMES: Readonly<Record<string, readonly [Topology, boolean]>> = {
  redis: ['single', false],
  rediss: ['single', true],
  'redis+sentinel': ['sentinel', false],
  'rediss+sentinel': ['sentinel', true],
  'redis+cluster': ['cluster', false],
  'rediss+cluster': ['cluster', true],
};
const KNOWN = Object.keys(SCHEMES)
  .map((scheme) => `${scheme}://`)
  .join(', ');

/** `scheme://[userinfo@]hosts[/path]`; a query or fragment is refused rather than ignored. */
const SHAPE = /^([a-z+]+):\/\/(?:([^@/?#]*)@)?([^/?#]*)(?:\/([^?#]*))?$/i;
/** `host`, `host:port`, `[v6]` or `[v6]:port`. */
const HOST = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/i;

/**
 * The target `url` names, or a one-line problem that never repeats the URL (it may hold a
 * password): unknown scheme, no host, a Sentinel URL without a master name, a bad port or db.
 */
export function parseRedisUrl(url: string): RedisTarget | string {
  const [, scheme = '', userinfo, hostList = '', path] = SHAPE.exec(url) ?? [];
  const kind = SCHEMES[scheme.toLowerCase()];
  if (kind === undefined)
    return SHAPE.test(url)
      ? `unknown scheme "${scheme}://"; expected one of ${KNOWN}`
      : `expected memory or a URL such as redis://host:6379 (${KNOWN})`;
  const [topology, tls] = kind;
  const defaultPort = topology === 'sentinel' ? 26379 : 6379;
  const hosts = [];
  for (const entry of hostList.split(',').filter((entry) => entry !== '')) {
    const [, host = '', port] = HOST.exec(entry) ?? [];
    const number = port === undefined ? defaultPort : Number(port);
    if (host === '' || number < 1 || number > 65535) return `"${entry}" is not a host[:port]`;
    hosts.push({ host: host.replace(/^\[(.*)\]$/, '$1'), port: number });
  }
  if (hosts.length === 0) return `${scheme}:// names no host`;
  if (topology === 'single' && hosts.length > 1)
    return `${scheme}:// names one host; several are ${scheme}+sentinel:// or ${scheme}+cluster://`;

  const segments = (path ?? '').split('/').filter((segment) => segment !== '');
  let masterName: string | undefined;
  if (topology === 'sentinel') {
    masterName = segments.shift();
    if (masterName === undefined)
      return `${scheme}:// needs the master name after the hosts (…/mymaster)`;
    masterName = decoded(masterName);
  }
  if (topology === 'cluster' && segments.length > 0)
    return `${scheme}:// takes no path (a cluster has database 0 only)`;
  const [db = '0', ...rest] = segments;
  if (!/^\d{1,2}$/.test(db) || rest.length > 0)
    return `"/${segments.join('/')}" is not a database number`;

  const colon = userinfo?.indexOf(':') ?? -1;
  const user = userinfo === undefined ? '' : colon < 0 ? userinfo : userinfo.slice(0, colon);
  const password = userinfo === undefined || colon < 0 ? '' : userinfo.slice(colon + 1);
  return {
    topology,
    tls,
    hosts,
    masterName,
    db: Number(db),
    username: user === '' ? undefined : decoded(user),
    password: password === '' ? undefined : decoded(password),
  };
}

/** Percent-decoded; a malformed escape is kept as written (the server then refuses it). */
function decoded(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** True when every host is this machine (plain Redis then crosses no network). */
export const onLoopback = (target: RedisTarget): boolean =>
  target.hosts.every(({ host }) => /^(?:localhost|::1|127(?:\.\d{1,3}){3})$/i.test(host));

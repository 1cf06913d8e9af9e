// The store URL forms as an operator writes them, and the one-line problem for each mistake.
import { describe, expect, it } from 'vitest';
import { parseRedisUrl } from './url.js';

describe('parseRedisUrl', () => {
  it.each([
    [
      'redis://cache:6380/2',
      { topology: 'single', tls: false, db: 2, hosts: [{ host: 'cache', port: 6380 }] },
    ],
    [
      'rediss://[::1]',
      { topology: 'single', tls: true, db: 0, hosts: [{ host: '::1', port: 6379 }] },
    ],
    [
      'redis+sentinel://s1:26379,s2,s3:26380/gate',
      {
        topology: 'sentinel',
        masterName: 'gate',
        hosts: [
          { host: 's1', port: 26379 },
          { host: 's2', port: 26379 },
          { host: 's3', port: 26380 },
        ],
      },
    ],
    ['rediss+sentinel://s1/gate/1', { topology: 'sentinel', tls: true, masterName: 'gate', db: 1 }],
    [
      'rediss+cluster://user:p%40ss@c1:7000,c2:7001',
      {
        topology: 'cluster',
        tls: true,
        username: 'user',
        password: 'p@ss',
        hosts: [
          { host: 'c1', port: 7000 },
          { host: 'c2', port: 7001 },
        ],
      },
    ],
    ['redis://:only-password@cache', { username: undefined, password: 'only-password' }],
  ])('%s', (url, expected) => {
    expect(parseRedisUrl(url)).toMatchObject(expected);
  });

  it.each([
    ['memcached://cache:11211', /^unknown scheme "memcached:\/\/"; expected one of redis:\/\//],
    ['cache:6379', /^expected memory or a URL such as redis:\/\/host:6379/],
    ['redis+sentinel://s1:26379,s2:26379', /needs the master name after the hosts/],
    ['redis+sentinel://:secret@s1:26379/', /needs the master name/],
    ['redis+cluster://', /^redis\+cluster:\/\/ names no host$/],
    ['redis://', /names no host/],
    [
      'redis://a:6379,b:6379',
      /names one host; several are redis\+sentinel:\/\/ or redis\+cluster:\/\//,
    ],
    ['redis+cluster://c1:7000/1', /takes no path/],
    ['redis://cache:99999', /"cache:99999" is not a host\[:port\]/],
    ['redis://cache/x', /is not a database number/],
    ['redis://cache?db=1', /expected memory or a URL/],
  ])('%s is refused: %s', (url, problem) => {
    const answer = parseRedisUrl(url);
    expect(answer).toMatch(problem);
  });

  it('never repeats a password in a problem', () => {
    expect(parseRedisUrl('redis+sentinel://u:hunter2@s1')).not.toContain('hunter2');
    expect(parseRedisUrl('redis+cluster://u:hunter2@c1/0')).not.toContain('hunter2');
  });
});

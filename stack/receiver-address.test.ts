// The start-time line about receivers whose sender shares its address with the browsers.
import { describe, expect, it } from 'vitest';
import { receiverAddressWarning } from './receiver-address.js';

describe('the receivers’ address warning', () => {
  it.each([
    // receivers, dev IdP, SG_REAL_IP_FROM → warns
    [['/backchannel-logout'], true, 'unix:', /dev IdP pushes from 127\.0\.0\.1/],
    [['/backchannel-logout'], true, '10.0.0.0/8', /dev IdP pushes from 127\.0\.0\.1/],
    [['/ssf/events'], false, 'unix:', /SG_REAL_IP_FROM is unix:/],
    [['/backchannel-logout', '/ssf/events'], false, undefined, /SG_REAL_IP_FROM is unix:/],
    [['/backchannel-logout'], false, '10.0.0.0/8', undefined],
    [[], true, 'unix:', undefined],
  ] as const)(
    'receivers %j, dev IdP %s, SG_REAL_IP_FROM %s',
    (receivers, devIdp, realIpFrom, expected) => {
      const line = receiverAddressWarning({ receivers, devIdp, realIpFrom });
      if (expected === undefined) return expect(line).toBeUndefined();
      expect(line).toMatch(expected);
      expect(line).toContain(receivers.join(', '));
      expect(line).toContain("cannot be the sender's");
    },
  );
});

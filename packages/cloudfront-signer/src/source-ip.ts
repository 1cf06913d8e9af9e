// The `AWS:SourceIp` value of a custom policy: one IPv4 address or CIDR block.
// CloudFront matches viewers by IPv4 only (its guide says not to enable IPv6 on a distribution
// whose policies restrict by IP), so IPv6 is refused here rather than signed into a dead URL.

const octet = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const ipv4Cidr = new RegExp(`^(${octet}(?:\\.${octet}){3})(?:/(3[0-2]|[12]?\\d))?$`);

/**
 * Validates an IPv4 address or CIDR block and returns it in the form CloudFront expects
 * (`a.b.c.d/n`; a bare address becomes `/32`, as the AWS SDK does).
 * Throws a TypeError for anything else: octets above 255, leading zeros, masks above 32, IPv6.
 */
export function normaliseSourceIp(value: unknown): string {
  if (typeof value !== 'string')
    throw new TypeError('"ipAddress" must be an IPv4 address or CIDR block string');
  const match = ipv4Cidr.exec(value);
  if (!match) {
    const hint = value.includes(':')
      ? ' (IPv6 is not matched by CloudFront signed-URL policies)'
      : '';
    throw new TypeError(
      `"ipAddress" must be an IPv4 address or CIDR block such as 192.0.2.0/24${hint}`,
    );
  }
  return `${match[1]}/${match[2] ?? '32'}`;
}

// Policy statements, byte for byte as CloudFront and the AWS SDKs write them.
// The canned policy is never sent: CloudFront rebuilds it from the URL and `Expires` and checks the
// signature against its own bytes, so key order and the absence of whitespace matter. The custom
// policy travels with the request; we keep the AWS SDK's key order so both produce equal bytes.

export interface PolicyConditions {
  /** `DateLessThan`, epoch seconds. */
  readonly expires: number;
  /** `DateGreaterThan`, epoch seconds. */
  readonly notBefore?: number | undefined;
  /** `IpAddress.AWS:SourceIp`, already normalised to `a.b.c.d/n`. */
  readonly sourceIp?: string | undefined;
}

/** The canned policy CloudFront reconstructs for a URL signed with `Expires`. */
export function cannedPolicy(url: string, expires: number): string {
  return JSON.stringify({
    Statement: [{ Resource: url, Condition: { DateLessThan: { 'AWS:EpochTime': expires } } }],
  });
}

/** A custom policy: one statement, conditions in the order DateLessThan, DateGreaterThan, IpAddress. */
export function customPolicy(resource: string, conditions: PolicyConditions): string {
  const condition: Record<string, Record<string, number | string>> = {
    DateLessThan: { 'AWS:EpochTime': conditions.expires },
  };
  if (conditions.notBefore !== undefined)
    condition['DateGreaterThan'] = { 'AWS:EpochTime': conditions.notBefore };
  if (conditions.sourceIp !== undefined)
    condition['IpAddress'] = { 'AWS:SourceIp': conditions.sourceIp };
  return JSON.stringify({ Statement: [{ Resource: resource, Condition: condition }] });
}

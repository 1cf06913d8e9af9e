// Checks on the URLs and resource patterns that go into a policy.
// A signature covers the exact bytes of the resource, so the URL must already be in its final
// percent-encoded form: we refuse to guess an encoding (that would sign a URL other than the one
// the caller will use) and never run it through `URL`, which would re-serialise it.

// RFC 3986 unreserved + reserved characters, plus `%` for percent-escapes. Anything else (spaces,
// quotes, non-ASCII, control characters) must be percent-encoded by the caller.
const urlCharacters = /^[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]+$/;
const badPercent = /%(?![0-9A-Fa-f]{2})/;
const signingParameter = /(?:^|&)(?:Expires|Policy|Signature|Key-Pair-Id|Hash-Algorithm)=/;
const MAX_LENGTH = 8192;

/** Validates a URL to be signed (`signUrl`). Throws a TypeError naming the field on any problem. */
export function checkSignableUrl(url: unknown): string {
  if (typeof url !== 'string') throw new TypeError('"url" must be a string');
  checkCommon(url, 'url', /^https?:\/\/[^/?#]+/);
  if (url.includes('#')) throw new TypeError('"url" must not contain a fragment (#)');
  if (url.endsWith('?') || url.endsWith('&'))
    throw new TypeError('"url" must not end with "?" or "&"');
  const query = url.indexOf('?');
  if (query !== -1 && signingParameter.test(url.slice(query + 1))) {
    throw new TypeError(
      '"url" already carries CloudFront signing parameters (Expires, Policy, Signature, Key-Pair-Id, Hash-Algorithm)',
    );
  }
  return url;
}

/**
 * Validates a custom-policy resource pattern (`signCookies`), where `*` and `?` are wildcards,
 * e.g. `https://cdn.example.com/private/*`.
 */
export function checkResourcePattern(resource: unknown): string {
  if (typeof resource !== 'string') throw new TypeError('"resource" must be a string');
  checkCommon(resource, 'resource', /^(?:https?|http\*|\*):\/\/[^/#]+/);
  if (resource.includes('#')) throw new TypeError('"resource" must not contain a fragment (#)');
  return resource;
}

function checkCommon(value: string, field: string, shape: RegExp): void {
  if (value.length > MAX_LENGTH)
    throw new TypeError(`"${field}" is longer than ${MAX_LENGTH} characters`);
  if (!shape.test(value))
    throw new TypeError(`"${field}" must be an absolute http:// or https:// URL`);
  if (!urlCharacters.test(value) || badPercent.test(value)) {
    throw new TypeError(
      `"${field}" must be percent-encoded already (no spaces, quotes or non-ASCII characters)`,
    );
  }
}

// A stand-in for njs's `r` with just what our handlers touch, so they run under Node in vitest.

export interface FakeRequest {
  readonly variables: Record<string, string | undefined>;
  readonly headersOut: Record<string, string | string[] | undefined>;
  readonly errors: string[];
  status?: number;
  body?: string;
  error(message: string): void;
  return(status: number, body?: string): void;
}

/** A request whose NGINX variables are `variables`; records what the handler answers. */
export function createFakeRequest(variables: Record<string, string | undefined> = {}): FakeRequest {
  const request: FakeRequest = {
    variables,
    headersOut: {},
    errors: [],
    error(message) {
      request.errors.push(message);
    },
    return(status, body) {
      if (request.status !== undefined) throw new Error('r.return() called twice');
      request.status = status;
      request.body = body;
    },
  };
  return request;
}

// "Never leaked", as a ledger: every response a suite saw and every token it sent are recorded, then
// scanned together with every log line the stack wrote. A secret may only appear in a 200 that a
// valid token earned; a token may never appear in a log line, whole or by its signature.

export interface RecordedResponse {
  /** What was asked, for the report (never the token itself). */
  readonly label: string;
  readonly status: number;
  readonly body: string;
  /** True only for a request that carried a valid token for the protected resource. */
  readonly earned: boolean;
}

export interface Leak {
  readonly kind: 'secret-in-response' | 'token-in-log' | 'query-in-log';
  /** Where it was seen: the request label or `file:line`. */
  readonly where: string;
  /** A short description that never repeats the secret or the token. */
  readonly detail: string;
}

export interface LeakWatch {
  /** Remembers a response for the final scan. */
  recordResponse(response: RecordedResponse): void;
  /** Remembers a token (or any credential string) that must never reach a log. */
  recordToken(token: string): void;
  readonly responseCount: number;
  readonly tokenCount: number;
  /** Scans the recorded responses and the given log sources; returns every leak found. */
  scan(logs: ReadonlyArray<{ readonly name: string; readonly text: string }>): Leak[];
}

// Shorter strings than this match by accident (a JWT header prefix, a short garbage value).
const MIN_NEEDLE = 16;
// A compact JWS/JWT as it would appear if a component logged one verbatim.
const JWT_SHAPE = /eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}/;
// A client's query string quoted in an NGINX error-log line (its request line or referrer). NGINX
// sends none of its own: the verifier's URL is fixed, the policy travels in X-SG-Policy.
const CLIENT_QUERY = /(?:request|referrer): "[^"]*\?/;

/** Creates a ledger for one suite; `secretValues` are the values the gate hands out. */
export function createLeakWatch(secretValues: readonly string[]): LeakWatch {
  const secrets = secretValues.filter((s) => s.length >= 6);
  if (secrets.length === 0)
    throw new TypeError('a leak watch needs at least one secret value of 6+ characters');
  const responses: RecordedResponse[] = [];
  const needles = new Set<string>();

  return {
    recordResponse(response) {
      responses.push(response);
    },
    recordToken(token) {
      if (token.length >= MIN_NEEDLE) needles.add(token);
      // The signature alone identifies (and with the rest of a log line may rebuild) the token.
      const signature = token.split('.')[2];
      if (signature !== undefined && signature.length >= MIN_NEEDLE) needles.add(signature);
    },
    get responseCount() {
      return responses.length;
    },
    get tokenCount() {
      return needles.size;
    },
    scan(logs) {
      const leaks: Leak[] = [];
      for (const r of responses) {
        if (r.earned && r.status === 200) continue;
        const found = secrets.filter((s) => r.body.includes(s)).length;
        if (found > 0) {
          leaks.push({
            kind: 'secret-in-response',
            where: r.label,
            detail: `status ${r.status} body holds ${found} secret value(s)`,
          });
        }
      }
      for (const { name, text } of logs) {
        const lines = text.split('\n');
        lines.forEach((line, i) => {
          if (line.length < MIN_NEEDLE) return;
          let hit = JWT_SHAPE.test(line);
          if (!hit)
            for (const needle of needles)
              if (line.includes(needle)) {
                hit = true;
                break;
              }
          if (hit)
            leaks.push({
              kind: 'token-in-log',
              where: `${name}:${i + 1}`,
              detail: 'a bearer token appears in the line',
            });
          else if (name.startsWith('nginx') && CLIENT_QUERY.test(line))
            leaks.push({
              kind: 'query-in-log',
              where: `${name}:${i + 1}`,
              detail: "a client's query string appears in the line",
            });
        });
      }
      return leaks;
    },
  };
}

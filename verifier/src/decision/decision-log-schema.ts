// The decision log's line, declared once: the JSON Schema operators and SIEMs read
// (docs/decision-log.schema.json) is generated from it, and the tests hold real lines to it.
// Version 1: fields may be added (optional) within a version; one that changes meaning or goes
// away bumps `decision_log`.
import { z } from 'zod';
import { DECISION_LOG_VERSION } from './decision-log.js';

const hex = (digits: number) => z.string().regex(new RegExp(`^[0-9a-f]{${digits}}$`));

export const decisionLogLine = z
  .looseObject({
    level: z.literal(30).describe('pino level: info.'),
    time: z.number().int().describe('Milliseconds since 1970 (pino).'),
    service: z.literal('secret-gate-verifier'),
    msg: z.enum(['allowed', 'denied']),
    decision_log: z.literal(DECISION_LOG_VERSION).describe('The version of this shape.'),
    outcome: z.enum(['allow', 'deny']),
    status: z.union([z.literal(204), z.literal(401), z.literal(403)]).describe("/verify's answer."),
    reason: z
      .string()
      .regex(/^[a-z_]+$/)
      .describe('`allowed`, or the refusal code (docs/architecture.md, verifier/src/errors.ts).'),
    policy: z.string().describe('The policy asked for (`X-SG-Policy`; `default` when absent).'),
    set: z
      .string()
      .optional()
      .describe('On an allow: the set NGINX serves (`X-Auth-Set`, or `default` with no client).'),
    client: z.string().optional().describe("The token's client id, once the token was verified."),
    issuer: z.string().optional().describe('The issuer (`iss`), once the token was verified.'),
    subject_hash: hex(32)
      .optional()
      .describe(
        'HMAC-SHA256 (VERIFIER_DECISION_LOG_KEY_FILE) of issuer LF `sub`, first 32 hex digits.',
      ),
    subject: z
      .string()
      .optional()
      .describe('The `sub` itself, only with VERIFIER_DECISION_LOG_SUBJECT=plain.'),
    trace_id: hex(32).optional().describe("The W3C trace id NGINX sent (its access log's)."),
    parent_span_id: hex(16).optional().describe("NGINX's span id (its access log's `span_id`)."),
    fp: hex(8).optional().describe("The first 8 hex digits of the token's SHA-256."),
    uri: z.string().optional().describe('The path asked for, shortened as the access log does.'),
    method: z.string().optional(),
    detail: z.string().optional().describe('Why, in words, on a refusal; never a token or proof.'),
    suppressed: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe(
        'Refusals without a verified token left out (a flood) since the previous such line.',
      ),
  })
  .meta({
    title: 'secret-gate decision log line',
    description: "One JSON line per /verify decision of the verifier (msg 'allowed' or 'denied').",
  });

/** The JSON Schema of a decision log line (docs/decision-log.schema.json). */
export const decisionLogJsonSchema = () => z.toJSONSchema(decisionLogLine);

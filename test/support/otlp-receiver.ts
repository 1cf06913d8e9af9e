// An OTLP/HTTP trace receiver in the test process (no collector image can be pulled here): it
// takes `POST /v1/traces` as http/json or http/protobuf and decodes the protobuf with the official
// opentelemetry-proto definitions (the generated root an @opentelemetry/otlp-transformer release
// ships), so both encodings are read into one shape: ids in hex, as OTLP/JSON writes them.
import { createRequire } from 'node:module';
import { createServer, type Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../../stack/ports.js';

/** A span as OTLP/JSON writes it (opentelemetry-proto's JSON mapping: ids in hex). */
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: OtlpAttribute[];
  events?: { name: string; attributes?: OtlpAttribute[] }[];
  status?: { code?: number; message?: string };
}
export interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; boolValue?: boolean; intValue?: string | number };
}
interface OtlpBody {
  resourceSpans: {
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans: { spans: OtlpSpan[] }[];
  }[];
}

/** The one message of the generated root read here (its typings declare none). */
interface ProtoMessage {
  decode(bytes: Uint8Array): unknown;
  toObject(message: unknown, options: object): OtlpBody;
}
const require = createRequire(import.meta.url);
const root = require('otlp-proto/build/src/generated/root.js') as {
  opentelemetry: {
    proto: { collector: { trace: { v1: { ExportTraceServiceRequest: ProtoMessage } } } };
  };
};
const ExportTraceServiceRequest =
  root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

export const SPAN_KIND_INTERNAL = 1;
export const SPAN_KIND_SERVER = 2;
export const SPAN_KIND_CLIENT = 3;

export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>`: the value of OTEL_EXPORTER_OTLP_ENDPOINT. */
  readonly endpoint: string;
  /** Every span received so far. */
  spans(): OtlpSpan[];
  /** The content types of the exports received (`application/json`, `application/x-protobuf`). */
  readonly contentTypes: Set<string>;
  /** Every export as received (protobuf as latin1, so any UTF-8 string in it can be searched). */
  readonly raw: string[];
  /** The `service.name` of every resource exported so far. */
  readonly serviceNames: Set<string>;
  /** The SERVER span of `traceId`, once exported (fails after `ms`). */
  serverSpan(traceId: string, ms?: number): Promise<OtlpSpan>;
  close(): void;
}

/** Reads one export body, whichever of the two encodings it came in. */
function decodeBody(contentType: string, body: Buffer): OtlpBody {
  return contentType.includes('protobuf')
    ? fromProtobuf(body)
    : (JSON.parse(body.toString('utf8')) as OtlpBody);
}

/** Reads one export body into spans, whichever of the two encodings it came in. */
export function decodeExport(contentType: string, body: Buffer): OtlpSpan[] {
  return spansOf(decodeBody(contentType, body));
}

function spansOf(parsed: OtlpBody): OtlpSpan[] {
  return parsed.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
}

function fromProtobuf(body: Buffer): OtlpBody {
  const message = ExportTraceServiceRequest.decode(body);
  // bytes as base64 strings, then ids to hex; enums as numbers and 64-bit ints as strings, as in JSON.
  const object = ExportTraceServiceRequest.toObject(message, {
    longs: String,
    enums: Number,
    bytes: String,
    defaults: false,
  });
  const hex = (b64: string | undefined) =>
    b64 ? Buffer.from(b64, 'base64').toString('hex') : undefined;
  for (const r of object.resourceSpans)
    for (const s of r.scopeSpans)
      for (const span of s.spans) {
        span.traceId = hex(span.traceId) ?? '';
        span.spanId = hex(span.spanId) ?? '';
        const parent = hex(span.parentSpanId);
        if (parent === undefined) delete span.parentSpanId;
        else span.parentSpanId = parent;
        span.attributes ??= [];
      }
  return object;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const port = await freePort();
  const received: OtlpSpan[] = [];
  const raw: string[] = [];
  const contentTypes = new Set<string>();
  const serviceNames = new Set<string>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const type = req.headers['content-type'] ?? '';
      const body = Buffer.concat(chunks);
      if (req.url === '/v1/traces') {
        contentTypes.add(type);
        raw.push(body.toString(type.includes('protobuf') ? 'latin1' : 'utf8'));
        const parsed = decodeBody(type, body);
        received.push(...spansOf(parsed));
        for (const { resource } of parsed.resourceSpans) {
          const name = resource?.attributes?.find((a) => a.key === 'service.name');
          if (name?.value.stringValue !== undefined) serviceNames.add(name.value.stringValue);
        }
      }
      // An empty ExportTraceServiceResponse in the request's encoding.
      if (type.includes('protobuf'))
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans: () => received,
    contentTypes,
    raw,
    serviceNames,
    async serverSpan(traceId, ms = 5000) {
      for (const started = Date.now(); Date.now() - started < ms; await sleep(50)) {
        const found = received.find((s) => s.traceId === traceId && s.kind === SPAN_KIND_SERVER);
        if (found) return found;
      }
      throw new Error(`no SERVER span of trace ${traceId}`);
    },
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** The attribute's value as a string (ints included), or undefined. */
export function attributeOf(span: OtlpSpan, key: string): string | undefined {
  const value = span.attributes.find((a) => a.key === key)?.value;
  if (value === undefined) return undefined;
  const first = value.stringValue ?? value.intValue ?? value.boolValue;
  return first === undefined ? undefined : String(first);
}

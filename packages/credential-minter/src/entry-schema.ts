// The shape of one mint entry, declared once with zod and discriminated on `kind`. Parent keys are
// only ever named by file (`…File`): the entry itself holds nothing secret, so it can be printed.
// Templates are strings over the verified caller: {sub}, {client_id}, {scope}, {claims.NAME}.

import { z } from 'zod';

/** A value lives at most this long unless the entry says otherwise (and never past the token). */
export const defaultTtlSeconds = 300;
/** SigV4 presigned URLs refuse more than 7 days; no kind needs longer. */
const maxTtlSeconds = 7 * 24 * 3600;

const ttlSeconds = z.number().int().positive().max(maxTtlSeconds).default(defaultTtlSeconds);
const keyFile = z.string().min(1, 'must name a file');
const template = z.string().min(1);
/** JSON whose strings are templates; a string that is exactly one placeholder keeps the claim's type. */
const jsonTemplate = z.json();
const oneOrMany = z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]);

const jwtEntry = z.strictObject({
  kind: z.literal('jwt'),
  ttlSeconds,
  alg: z.enum(['HS256', 'ES256', 'RS256', 'EdDSA']),
  /** HS256: the shared secret (raw bytes of the file). Others: a private key, PEM or JWK. */
  keyFile,
  kid: z.string().min(1).optional(),
  iss: z.string().min(1).optional(),
  aud: oneOrMany.optional(),
  /** Defaults to "{sub}"; set to "" to leave `sub` out. */
  sub: z.string().optional(),
  /** Extra claims: fixed JSON, strings templated over the caller. */
  claims: z.record(z.string(), jsonTemplate).optional(),
});

const streamChatEntry = z.strictObject({
  kind: z.literal('stream-chat-token'),
  ttlSeconds,
  /** The Stream app's API secret. */
  secretFile: keyFile,
  userId: template.default('{sub}'),
});

const liveKitEntry = z.strictObject({
  kind: z.literal('livekit-token'),
  ttlSeconds,
  /** The LiveKit API key (its public name; becomes `iss`). */
  apiKey: z.string().min(1),
  /** The API secret matching `apiKey`. */
  secretFile: keyFile,
  identity: template.default('{sub}'),
  name: template.optional(),
  room: template,
  canPublish: z.boolean().default(true),
  canSubscribe: z.boolean().default(true),
  canPublishData: z.boolean().default(true),
});

const algoliaEntry = z.strictObject({
  kind: z.literal('algolia-secured-key'),
  ttlSeconds,
  /** The parent search-only API key. */
  parentKeyFile: keyFile,
  filters: template.optional(),
  userToken: template.default('{sub}'),
  restrictIndices: z.array(z.string().min(1)).min(1).optional(),
  restrictSources: z.string().min(1).optional(),
});

const typesenseEntry = z.strictObject({
  kind: z.literal('typesense-scoped-key'),
  ttlSeconds,
  /** The parent search-only API key. */
  parentKeyFile: keyFile,
  filterBy: template.optional(),
  /** Further embedded search parameters (strings templated), e.g. `limit_hits`, `collection`. */
  params: z.record(z.string(), jsonTemplate).optional(),
});

const meilisearchEntry = z.strictObject({
  kind: z.literal('meilisearch-tenant-token'),
  ttlSeconds,
  /** The parent API key (its value signs the token). */
  apiKeyFile: keyFile,
  /** The parent key's `uid`, as Meilisearch lists it (not secret). */
  apiKeyUid: z.uuid(),
  /** Index name → rules (filter templated), or a list of index names; default all indexes. */
  searchRules: jsonTemplate.default(['*']),
});

const s3Entry = z.strictObject({
  kind: z.literal('s3-presigned-url'),
  ttlSeconds,
  method: z.enum(['GET', 'PUT']).default('GET'),
  bucket: z.string().min(1),
  /** The object key, templated: "uploads/{sub}/avatar.png". */
  key: template,
  region: z.string().min(1).default('us-east-1'),
  /** An S3-compatible endpoint (MinIO, R2, Ceph); default AWS's regional one. */
  endpoint: z.url({ protocol: /^https?$/ }).optional(),
  /** Bucket in the path instead of the host name (most S3-compatible stores want this). */
  forcePathStyle: z.boolean().default(false),
  /** JSON {"accessKeyId": "…", "secretAccessKey": "…"}. */
  credentialsFile: keyFile,
});

const clientAuth = z.discriminatedUnion('method', [
  z.strictObject({ method: z.literal('client_secret_basic'), secretFile: keyFile }),
  z.strictObject({
    method: z.literal('private_key_jwt'),
    keyFile,
    alg: z.enum(['ES256', 'RS256', 'PS256', 'EdDSA']).default('ES256'),
    kid: z.string().min(1).optional(),
  }),
]);

const tokenExchangeEntry = z.strictObject({
  kind: z.literal('token-exchange'),
  ttlSeconds,
  clientId: z.string().min(1),
  clientAuth,
  audience: oneOrMany.optional(),
  resource: oneOrMany.optional(),
  scope: z.string().min(1).optional(),
});

export const mintEntrySchema = z.discriminatedUnion('kind', [
  jwtEntry,
  streamChatEntry,
  liveKitEntry,
  algoliaEntry,
  typesenseEntry,
  meilisearchEntry,
  s3Entry,
  tokenExchangeEntry,
]);

/** A parsed entry (defaults filled). */
export type MintEntry = z.infer<typeof mintEntrySchema>;
/** An entry as a user writes it (defaults optional). */
export type MintEntryInput = z.input<typeof mintEntrySchema>;
export type MintKind = MintEntry['kind'];
export type EntryOf<K extends MintKind> = Extract<MintEntry, { kind: K }>;
export const mintKinds: readonly MintKind[] = mintEntrySchema.options.map(
  (o) => o.shape.kind.value,
);

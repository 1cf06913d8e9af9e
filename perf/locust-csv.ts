// Locust's CSV output (stats, history, failures) as rows keyed by header. Locust quotes fields
// with commas (failure messages), so this reads RFC 4180 quoting rather than splitting on commas.

export type CsvRow = Readonly<Record<string, string>>;

/** Splits CSV text into records of fields, honouring double-quoted fields and `""` escapes. */
export function parseCsvRecords(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (quoted) {
      if (char === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (char === '"') quoted = false;
      else field += char;
    } else if (char === '"') quoted = true;
    else if (char === ',') {
      record.push(field);
      field = '';
    } else if (char === '\n' || char === '\r') {
      if (char === '\r' && text[i + 1] === '\n') i++;
      record.push(field);
      records.push(record);
      record = [];
      field = '';
    } else field += char;
  }
  if (field !== '' || record.length > 0) {
    record.push(field);
    records.push(record);
  }
  return records.filter((r) => !(r.length === 1 && r[0] === ''));
}

/** Parses CSV with a header line into rows keyed by column name. */
export function parseLocustCsv(text: string): CsvRow[] {
  const [header, ...records] = parseCsvRecords(text);
  if (!header) return [];
  return records.map((fields) =>
    Object.fromEntries(header.map((name, i) => [name, fields[i] ?? ''])),
  );
}

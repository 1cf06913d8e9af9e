// Where the verifier's published JSON Schema lives, and how it is written: as the repository's
// formatter would write it, so `prettier --check .` and the drift test agree.
import { format, resolveConfig } from 'prettier';

export const JSON_SCHEMA_FILE = new URL('../verifier/config.schema.json', import.meta.url);

export async function formatJson(text: string): Promise<string> {
  const options = await resolveConfig(JSON_SCHEMA_FILE);
  return format(text, { ...options, parser: 'json' });
}

// cf-sign: sign a CloudFront URL or a set of signed cookies from the command line, for operators
// checking a key or handing out a one-off link. Exit 0 on success, 2 on any bad argument or key
// (with a message that names the argument, never the key), 1 on anything unexpected.

import { readFileSync } from 'node:fs';
import { createPrivateKey } from 'node:crypto';
import { parseCliArgs, usage, type CliCommand } from './cli-args.js';
import type { CloudFrontAlgorithm } from './signing-key.js';
import { createCloudFrontSigner } from './signer.js';

class UsageError extends Error {}

/** Runs one command and returns the text to print on stdout. */
export async function runCfSign(command: CliCommand): Promise<string> {
  let keyText: string;
  try {
    keyText = readFileSync(command.privateKeyFile, 'utf8');
  } catch (error) {
    throw new UsageError(
      `cannot read --private-key ${JSON.stringify(command.privateKeyFile)} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  const signer = await createCloudFrontSigner({
    keyPairId: command.keyPairId,
    privateKey: keyText,
    algorithm: algorithmFor(keyText, command.hash),
    cacheSize: 0,
  });
  const conditions = {
    expires: command.expires,
    notBefore: command.notBefore,
    ipAddress: command.ip,
  };
  if (command.command === 'url')
    return (await signer.signUrl({ url: command.target, ...conditions })).url;
  return JSON.stringify(
    (await signer.signCookies({ resource: command.target, ...conditions })).cookies,
  );
}

/** The key type decides between RSA and ECDSA; --hash only chooses SHA-1 or SHA-256 for RSA. */
function algorithmFor(keyText: string, hash: 'SHA1' | 'SHA256' | undefined): CloudFrontAlgorithm {
  let type: string | undefined;
  try {
    type = createPrivateKey(
      keyText.trimStart().startsWith('{') ? { key: JSON.parse(keyText), format: 'jwk' } : keyText,
    ).asymmetricKeyType;
  } catch {
    type = undefined; // the signer reports an unreadable key with its own message
  }
  if (type === 'ec') {
    if (hash === 'SHA1')
      throw new UsageError(
        '--hash SHA1 is not available for ECDSA keys (CloudFront verifies ECDSA with SHA-256)',
      );
    return 'ECDSA-SHA256';
  }
  return hash === 'SHA256' ? 'RSA-SHA256' : 'RSA-SHA1';
}

async function main(argv: readonly string[]): Promise<number> {
  const parsed = parseCliArgs(argv);
  if (parsed.kind === 'help') {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  if (parsed.kind === 'error') {
    process.stderr.write(`cf-sign: ${parsed.message}\n\n${usage}\n`);
    return 2;
  }
  try {
    process.stdout.write(`${await runCfSign(parsed.command)}\n`);
    return 0;
  } catch (error) {
    if (error instanceof UsageError || error instanceof TypeError) {
      process.stderr.write(`cf-sign: ${error.message}\n`);
      return 2;
    }
    process.stderr.write('cf-sign: unexpected failure while signing\n');
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));

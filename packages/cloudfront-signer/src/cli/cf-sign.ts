// cf-sign: sign a CloudFront URL or a set of signed cookies from the command line, for operators
// checking a key or handing out a one-off link. Exit 0 on success, 2 on any bad argument or key
// (with a message that names the argument, never the key), 1 on anything unexpected. main.ts is the
// process entry; this module is callable in-process, so tests need no subprocess per case.

import { readFileSync } from 'node:fs';
import { createPrivateKey, type JsonWebKey } from 'node:crypto';
import { parseCliArgs, usage, type CliCommand } from './cli-args.js';
import { createCloudFrontSigner, type CloudFrontAlgorithm } from '../index.js';

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
      keyText.trimStart().startsWith('{')
        ? { key: JSON.parse(keyText) as JsonWebKey, format: 'jwk' }
        : keyText,
    ).asymmetricKeyType;
  } catch {
    type = undefined; // the signer reports an unreadable key with its own message
  }
  if (type === 'ec') {
    if (hash === 'SHA1')
      throw new UsageError(
        '--hash SHA1 is not available for ECDSA keys (cf-sign signs ECDSA with SHA-256 only)',
      );
    return 'ECDSA-SHA256';
  }
  return hash === 'SHA256' ? 'RSA-SHA256' : 'RSA-SHA1';
}

/** Where the command prints: stdout and stderr for the process, buffers for tests. */
export interface Output {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

/** The whole command line: parses `argv`, prints, and returns the exit code. */
export async function cfSignMain(argv: readonly string[], output: Output): Promise<number> {
  const parsed = parseCliArgs(argv);
  if (parsed.kind === 'help') {
    output.out(`${usage}\n`);
    return 0;
  }
  if (parsed.kind === 'error') {
    output.err(`cf-sign: ${parsed.message}\n\n${usage}\n`);
    return 2;
  }
  try {
    output.out(`${await runCfSign(parsed.command)}\n`);
    return 0;
  } catch (error) {
    if (error instanceof UsageError || error instanceof TypeError) {
      output.err(`cf-sign: ${error.message}\n`);
      return 2;
    }
    output.err('cf-sign: unexpected failure while signing\n');
    return 1;
  }
}

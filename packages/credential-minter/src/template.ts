// Templates over the verified caller: {sub}, {iss}, {client_id}, {scope} (space-separated) and
// {claims.NAME} (a top-level claim of the verified token). Compiled once at start, so an unknown
// placeholder stops the start; a claim the caller lacks is a MintError at request time.

import { MintError } from './mint-error.js';
import type { Caller } from './types.js';

interface Placeholder {
  readonly name: string;
  readonly read: (caller: Caller) => unknown;
}
type Part = string | Placeholder;
const placeholder = /\{([^{}]*)\}/g;

/** Compiles a string template; `field` names it in errors ("filters", "claims.org"). */
export function compileTemplate(
  text: string,
  field: string,
  substitute: (text: string, name: string) => string = (value) => value,
): (caller: Caller) => string {
  const parts = split(text, field);
  if (parts.length === 1 && typeof parts[0] === 'string') {
    const fixed = parts[0];
    return () => fixed;
  }
  return (caller) => {
    let out = '';
    for (const part of parts) {
      out += typeof part === 'string' ? part : substitute(asText(part.read(caller)), part.name);
    }
    return out;
  };
}

/**
 * Compiles JSON whose strings are templates. A string that is exactly one placeholder keeps the
 * claim's own JSON type (`"{claims.groups}"` → the array), so filters can take lists.
 */
export function compileJsonTemplate(value: unknown, field: string): (caller: Caller) => unknown {
  if (typeof value === 'string') {
    const parts = split(value, field);
    const only = parts[0];
    if (parts.length === 1 && typeof only === 'object') return only.read;
    return compileTemplate(value, field);
  }
  if (Array.isArray(value)) {
    const items = value.map((item, i) => compileJsonTemplate(item, `${field}[${i}]`));
    return (caller) => items.map((item) => item(caller));
  }
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value).map(
      ([key, item]) => [key, compileJsonTemplate(item, `${field}.${key}`)] as const,
    );
    return (caller) => Object.fromEntries(entries.map(([key, item]) => [key, item(caller)]));
  }
  return () => value;
}

function split(text: string, field: string): Part[] {
  const parts: Part[] = [];
  let last = 0;
  for (const match of text.matchAll(placeholder)) {
    if (match.index > last) parts.push(text.slice(last, match.index));
    parts.push(reader(match[1] ?? '', field));
    last = match.index + match[0].length;
  }
  if (last < text.length) parts.push(text.slice(last));
  const rest = parts.filter((part) => typeof part === 'string').join('');
  if (rest.includes('{') || rest.includes('}')) {
    throw new TypeError(`"${field}" has an unbalanced "{" or "}"`);
  }
  return parts.length === 0 ? [''] : parts;
}

function reader(name: string, field: string): Placeholder {
  return { name, read: readerOf(name, field) };
}

function readerOf(name: string, field: string): (caller: Caller) => unknown {
  switch (name) {
    case 'sub':
      return (caller) => caller.sub;
    case 'iss':
      return (caller) => caller.iss;
    case 'scope':
      return (caller) => caller.scopes.join(' ');
    case 'client_id':
      return (caller) => {
        if (caller.clientId === undefined) throw missing('client_id');
        return caller.clientId;
      };
  }
  if (name.startsWith('claims.') && name.length > 'claims.'.length) {
    const claim = name.slice('claims.'.length);
    return (caller) => {
      const value = Object.hasOwn(caller.claims, claim) ? caller.claims[claim] : undefined;
      if (value === undefined || value === null) throw missing(claim);
      return value;
    };
  }
  throw new TypeError(
    `"${field}" names an unknown placeholder "{${name}}" (known: {sub}, {iss}, {client_id}, {scope}, {claims.NAME})`,
  );
}

/** A claim the caller lacks, named (the code the host answers 403 for). */
export function missing(claim: string): MintError {
  return new MintError(
    'claim_missing',
    `the token has no "${claim}" claim, which the mint entry names`,
  );
}

function asText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.every((item) => typeof item === 'string'))
    return value.join(',');
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value) ?? '';
}

'use strict';
// A message's headers both ways: the list a publish takes, an array of [name, value]
// pairs, checked for what koffi would change (the C strings are NUL-terminated: a NUL
// would cut one short; a lone surrogate would become U+FFFD) and copied; and the pairs the
// library hands out with a lease, a peeked message or a dead letter, read in order.
//
// The rules themselves (at most 64 pairs and 16384 bytes of names and values, a name of
// 1..128 bytes of visible ASCII without '=', ...) are the library's: it refuses a list that
// breaks them with HAREL_ERR_ARGUMENT naming the header ("headers[2].name holds byte 0x3d:
// ..."), and writes nothing.

const koffi = require('koffi');
const { argumentError } = require('./errors');
const { checkString, describe } = require('./args');
const { HeaderType } = require('./native');

const POINTER = koffi.sizeof('void *');
const HEADER_SIZE = koffi.sizeof(HeaderType);
const NAME_AT = koffi.offsetof(HeaderType, 'name');
const VALUE_AT = koffi.offsetof(HeaderType, 'value');

/** What a message without headers carries: one frozen empty list, shared. */
const NO_HEADERS = Object.freeze([]);

/**
 * The `headers` option of a publish (`prefix` names it in errors, 'messages[3].' in a
 * batch): null for none (absent, null or empty), else a copy as [name, value] pairs,
 * each checked to be two strings without NUL.
 */
function headerPairs(prefix, headers) {
  if (headers === undefined || headers === null) return null;
  if (!Array.isArray(headers)) {
    throw argumentError(`${prefix}headers must be an array of [name, value] pairs, got ${describe(headers)}`);
  }
  if (headers.length === 0) return null;
  return Array.from(headers, (pair, i) => {
    const name = `${prefix}headers[${i}]`;
    if (!Array.isArray(pair) || pair.length !== 2) {
      throw argumentError(`${name} must be a [name, value] pair of strings, got ${describe(pair)}`);
    }
    return [checkString(`${name}.name`, pair[0]), checkString(`${name}.value`, pair[1])];
  });
}

/** Pairs as the C array of harel_header (koffi copies it in), or null for none. */
function headerStructs(pairs) {
  if (pairs === null || pairs.length === 0) return null;
  return pairs.map(([name, value]) => ({ name, value }));
}

/** The C arguments `headers, n_headers` of pairs (null for none). */
function headerArgs(pairs) {
  const structs = headerStructs(pairs);
  return [structs, structs === null ? 0 : structs.length];
}

/**
 * The `n` headers the library handed out at `ptr` (a const harel_header *), copied into a
 * frozen array of frozen [name, value] pairs, in order. Names and values are UTF-8 without
 * NUL (the library checked them at publish), so they come back byte for byte.
 */
function readHeaders(ptr, n) {
  const count = Number(n);
  if (count === 0 || !ptr) return NO_HEADERS;
  const base = Number(ptr);
  const pairs = new Array(count);
  for (let i = 0; i < count; i++) {
    const at = base + i * HEADER_SIZE;
    pairs[i] = Object.freeze([
      koffi.decode.string(koffi.decode.uint64(at + NAME_AT)),
      koffi.decode.string(koffi.decode.uint64(at + VALUE_AT)),
    ]);
  }
  return Object.freeze(pairs);
}

/**
 * Item `i` of a page's `const harel_headers *headers` array (NULL: none for any item), as
 * readHeaders makes it.
 */
function readHeaderList(lists, i) {
  if (!lists) return NO_HEADERS;
  const at = Number(lists) + i * 2 * POINTER; // harel_headers: items, then n
  return readHeaders(koffi.decode.uint64(at), koffi.decode.uint64(at + POINTER));
}

module.exports = { NO_HEADERS, headerPairs, headerStructs, headerArgs, readHeaders, readHeaderList };

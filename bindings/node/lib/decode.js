'use strict';
// Reading what the library hands out: text by pointer and length, the event's JSON, the
// ABI's optional numbers.

const koffi = require('koffi');

/**
 * The `len` bytes at `ptr` as text (NUL bytes included), decoded straight from C memory
 * (V8's UTF-8 decoder, as Buffer's toString: an invalid sequence becomes U+FFFD).
 */
function bytesText(ptr, len) {
  const n = Number(len);
  return n === 0 ? '' : koffi.decode.string(ptr, n);
}

/** JSON.parse(text), or undefined for text that isn't JSON JavaScript parses. */
function parsed(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined; // e.g. NaN from another producer
  }
}

/** The ABI's optional numbers: -1 (any negative) is absent, null. */
function optionalNumber(x) {
  return x < 0 ? null : x;
}

module.exports = { bytesText, parsed, optionalNumber };

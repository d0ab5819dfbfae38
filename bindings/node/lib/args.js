'use strict';
// Arguments: what koffi would silently change is refused here (a NUL would truncate the
// C string, a lone surrogate would become U+FFFD, 1.5 would become 1, NaN would become 0
// for an integer). Ranges (priority 0..4, visibility > 0, ...) are the library's to check.
// The checks several files use; a method group's own are in its file.

const { argumentError } = require('./errors');

// The API's defaults and bounds (index.js exports them).
const DEFAULT_VISIBILITY = 30;
const DEFAULT_LIMIT = 100;
const MAX_PAGE = 10000;
const MAX_CLAIM = 1000; // HAREL_MAX_CLAIM: the most leases one claimMany hands out
const MAX_LIMIT = 1000000; // MAX_LIMIT: the most of a limit's numbers (a concurrency, a rate, a burst)

function checkString(name, value, { nullable = false, nul = false } = {}) {
  if (nullable && (value === undefined || value === null)) return null;
  if (typeof value !== 'string') {
    throw argumentError(`${name} must be a string${nullable ? ' or null' : ''}, got ${describe(value)}`);
  }
  if (!nul && value.includes('\0')) throw argumentError(`${name} must not contain a NUL character`);
  if (!value.isWellFormed()) throw argumentError(`${name} is not valid Unicode (it has a lone surrogate)`);
  return value;
}

function checkInteger(name, value) {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < -(2 ** 31) || value >= 2 ** 31) {
    throw argumentError(`${name} must be an integer, got ${describe(value)}`);
  }
  return value;
}

function checkNumber(name, value) {
  if (typeof value !== 'number') throw argumentError(`${name} must be a number of seconds, got ${describe(value)}`);
  return value;
}

/** A count the C side takes as uint32_t: an integer 0..2^32-1 (koffi would wrap others). */
function checkUint32(name, value) {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value >= 2 ** 32) {
    throw argumentError(`${name} must be an integer 0..4294967295, got ${describe(value)}`);
  }
  return value;
}

/** A seq: a safe integer Number, or a BigInt within int64. */
function checkSeq(name, seq) {
  if (!((typeof seq === 'number' && Number.isSafeInteger(seq)) || typeof seq === 'bigint')) {
    throw argumentError(`${name} must be an integer (number or bigint), got ${describe(seq)}`);
  }
  if (typeof seq === 'bigint' && (seq < -(2n ** 63n) || seq >= 2n ** 63n)) {
    throw argumentError(`${name} is outside int64: ${seq}`);
  }
  return seq;
}

function checkBoolean(name, value) {
  if (typeof value !== 'boolean') throw argumentError(`${name} must be a boolean, got ${describe(value)}`);
  return value;
}

function checkOptions(name, value, allowed) {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw argumentError(`${name} must be an object, got ${describe(value)}`);
  }
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) {
      throw argumentError(`${name}: unknown option ${JSON.stringify(key)} (known: ${allowed.join(', ')})`);
    }
  }
  return value;
}

function describe(value) {
  if (value === null) return 'null';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value)}`;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return `${typeof value} ${value}`;
  return Array.isArray(value) ? 'an array' : typeof value;
}

/** An AbortSignal, or null; anything else is refused (a typo would otherwise never abort). */
function signalArg(signal) {
  if (signal === undefined || signal === null) return null;
  if (typeof signal !== 'object' || typeof signal.aborted !== 'boolean' || typeof signal.addEventListener !== 'function') {
    throw argumentError(`signal must be an AbortSignal, got ${describe(signal)}`);
  }
  return signal;
}

module.exports = {
  DEFAULT_VISIBILITY,
  DEFAULT_LIMIT,
  MAX_PAGE,
  MAX_CLAIM,
  MAX_LIMIT,
  checkString,
  checkInteger,
  checkNumber,
  checkUint32,
  checkSeq,
  checkBoolean,
  checkOptions,
  describe,
  signalArg,
};

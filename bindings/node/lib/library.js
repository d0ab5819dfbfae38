'use strict';
// The package's functions: the library's version and file, the schema's SQL, and the
// shard of a group id.

const koffi = require('koffi');
const { argumentError } = require('./errors');
const { checkString, describe } = require('./args');
const { callCheckedHere } = require('./calls');
const { load } = require('./native');

/** A copy of a string the library handed out; the library's copy is freed. */
function takeString(ptr) {
  try {
    return koffi.decode.string(ptr);
  } finally {
    load().stringFree(ptr);
  }
}

/** The library's version, "MAJOR.MINOR.PATCH". */
function version() {
  return load().version();
}

/** Which library file was loaded, and its version. */
function libraryInfo() {
  const f = load();
  return { path: f.where, version: f.version() };
}

/** The idempotent CREATE statements of a fresh schema, one per line, for a migration tool. */
function schemaSql(prefix = 'harel') {
  return schemaText('schemaSql', load().schemaSql, prefix);
}

/** The statements that upgrade a harel 0.9 groups table (adds routing_key). Run once. */
function schemaUpgradeSql(prefix = 'harel') {
  return schemaText('schemaUpgradeSql', load().schemaUpgradeSql, prefix);
}

/**
 * The shard (0..shards-1) that holds `groupId` in a queue sharded over `shards` databases
 * (harel_shard_of: FNV-1a 64 of the id's UTF-8 bytes, modulo `shards`). Needs no
 * transport. An empty id and `shards` outside 1..256 are the library's to refuse.
 */
function shardOf(groupId, shards) {
  checkString('groupId', groupId);
  // size_t: koffi would turn -1 into 2^64 - 1 and 1.5 into 1.
  if (typeof shards !== 'number' || !Number.isSafeInteger(shards) || shards < 0) {
    throw argumentError(`shards must be an integer (1..256), got ${describe(shards)}`);
  }
  const f = load();
  const out = [0];
  callCheckedHere(f, 'shardOf', f.shardOf, [groupId, shards, out]);
  return Number(out[0]);
}

function schemaText(what, fn, prefix) {
  checkString('prefix', prefix);
  const out = [null];
  callCheckedHere(load(), what, fn, [prefix, out]);
  return takeString(out[0]);
}

module.exports = { version, libraryInfo, schemaSql, schemaUpgradeSql, shardOf };

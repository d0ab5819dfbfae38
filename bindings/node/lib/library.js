'use strict';
// The package's functions: the library's version and file, and the schema's SQL.

const koffi = require('koffi');
const { checkString } = require('./args');
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

function schemaText(what, fn, prefix) {
  checkString('prefix', prefix);
  const out = [null];
  callCheckedHere(load(), what, fn, [prefix, out]);
  return takeString(out[0]);
}

module.exports = { version, libraryInfo, schemaSql, schemaUpgradeSql };

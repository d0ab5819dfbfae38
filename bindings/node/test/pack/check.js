'use strict';
// The npm package's test (make test-npm, mk/npm.mk): given the tarball `npm pack` made,
// checks its versions and file list, installs it with `npm install <tarball>` into a fresh
// directory outside the repository (koffi from the registry; no build tree in reach, no
// HAREL_TRANSPORT_LIB, no LD_LIBRARY_PATH), and runs smoke.js there (publish, claim, ack, a
// waiting claimMany and ackMany; the library loaded from the package's prebuilds/) and an
// ES module import. Prints each check, then "npm: N passed, M failed"; exits 1 if any
// failed.
//
//   node test/pack/check.js <harel-transport-VERSION.tgz>
// HAREL_NPM_KEEP=1 keeps the fresh directory (its path is printed).

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const PACKAGE = path.resolve(__dirname, '..', '..');
const ROOT = path.resolve(PACKAGE, '..', '..');
const LIB = 'prebuilds/linux-x64-gnu/libharel_transport.so.1';
const POLL = 'prebuilds/linux-x64-gnu/harel_transport_poll.node'; // the poll addon of waiting claims
// index.js's modules: every file of the package's lib/.
const MODULES = fs.readdirSync(path.join(PACKAGE, 'lib'), { recursive: true })
  .map((f) => `lib/${f.split(path.sep).join('/')}`)
  .filter((f) => fs.statSync(path.join(PACKAGE, f)).isFile());
const EXPECTED = ['README.md', 'index.d.ts', 'index.js', ...MODULES, LIB, POLL, 'package.json'].map((f) => `package/${f}`).sort();
const NPM = process.env.NPM || 'npm';
const started = Date.now();

let passed = 0;
let failed = 0;
function check(name, ok, detail) {
  if (ok) passed += 1;
  else failed += 1;
  console.log(`${ok ? 'ok' : 'not ok'} - ${name}${detail === undefined ? '' : `: ${detail}`}`);
}

/** Runs a command; returns its stdout (and prints it, and stderr, when `show`). */
function run(command, args, { cwd, env, show = false } = {}) {
  if (show) console.log(`$ ${[path.basename(command), ...args].join(' ')}`);
  const result = spawnSync(command, args, { cwd, env, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (result.error) throw new Error(`${command}: ${result.error.message}`);
  if (show) process.stdout.write(result.stdout + result.stderr);
  if (result.status !== 0) {
    if (!show) process.stdout.write(result.stdout + result.stderr);
    throw new Error(`${command} ${args.join(' ')} exited with ${result.status ?? result.signal}`);
  }
  return result.stdout;
}

function inside(dir, file) {
  const rel = path.relative(dir, file);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

function main() {
  const tarball = process.argv[2] && path.resolve(process.argv[2]);
  if (!tarball || !fs.existsSync(tarball)) throw new Error(`usage: node check.js <tarball> (got ${process.argv[2]})`);

  // Versions: the package's is the library's (Cargo.toml).
  const cargo = /^version = "(.*)"/m.exec(fs.readFileSync(path.join(ROOT, 'Cargo.toml'), 'utf8'))[1];
  const pkg = JSON.parse(fs.readFileSync(path.join(PACKAGE, 'package.json'), 'utf8'));
  check('package.json version is Cargo.toml\'s', pkg.version === cargo, `${pkg.version} / ${cargo}`);
  check('the tarball is named for it', path.basename(tarball) === `harel-transport-${pkg.version}.tgz`, path.basename(tarball));

  // Contents: what a user gets, and nothing else (no tests, no scripts).
  const size = fs.statSync(tarball).size;
  const listing = run('tar', ['tzvf', tarball]).trim().split('\n');
  const files = run('tar', ['tzf', tarball]).trim().split('\n').sort();
  console.log(`npm: ${path.relative(ROOT, tarball)}: ${size} bytes (${(size / 1048576).toFixed(1)} MiB), ${files.length} files:`);
  for (const line of listing) console.log(`  ${line}`);
  check('the tarball holds exactly index.js, lib/, index.d.ts, README.md, package.json, the library and the poll addon', JSON.stringify(files) === JSON.stringify(EXPECTED), files.join(' '));
  const packed = JSON.parse(run('tar', ['xzOf', tarball, 'package/package.json']));
  check('its package.json: version, os, cpu, libc, koffi the only dependency',
    packed.version === cargo && JSON.stringify(packed.os) === '["linux"]' && JSON.stringify(packed.cpu) === '["x64"]' &&
      JSON.stringify(packed.libc) === '["glibc"]' && JSON.stringify(Object.keys(packed.dependencies)) === '["koffi"]',
    JSON.stringify({ version: packed.version, os: packed.os, cpu: packed.cpu, libc: packed.libc, dependencies: packed.dependencies }));
  // OpenTelemetry's API: an optional peer (lib/tracing.js requires it only when asked to
  // trace), so npm installs nothing for it below and smoke.js runs without it.
  check('its package.json: @opentelemetry/api an optional peer dependency',
    Boolean(packed.peerDependencies && packed.peerDependencies['@opentelemetry/api']) &&
      Boolean(packed.peerDependenciesMeta && packed.peerDependenciesMeta['@opentelemetry/api'] &&
        packed.peerDependenciesMeta['@opentelemetry/api'].optional === true),
    JSON.stringify({ peerDependencies: packed.peerDependencies, peerDependenciesMeta: packed.peerDependenciesMeta }));

  // A fresh directory outside the repository, and an environment that points nowhere else.
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'harel-npm-')));
  const env = { ...process.env };
  for (const key of Object.keys(env)) {
    if (key.startsWith('npm_') || ['HAREL_TRANSPORT_LIB', 'HAREL_TRANSPORT_POLL', 'HAREL_TRANSPORT_PREBUILT', 'HAREL_TRANSPORT_PREBUILT_POLL', 'LD_LIBRARY_PATH', 'NODE_PATH'].includes(key)) delete env[key];
  }
  try {
    console.log(`npm: fresh directory ${dir}`);
    check('the fresh directory is outside the repository', !inside(ROOT, dir) && !inside(dir, ROOT), dir);
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'harel-npm-check', version: '0.0.0', private: true }, null, 2) + '\n');
    run(NPM, ['install', '--no-audit', '--no-fund', tarball], { cwd: dir, env, show: true });

    const installed = path.join(dir, 'node_modules', 'harel-transport');
    const lib = path.join(installed, ...LIB.split('/'));
    check('the installed package has the prebuilt library', fs.existsSync(lib), path.relative(dir, lib));
    const addon = path.join(installed, ...POLL.split('/'));
    check('the installed package has the poll addon', fs.existsSync(addon), path.relative(dir, addon));
    check('no build tree in reach (node_modules/harel-transport/../../target and ../../build absent)',
      !fs.existsSync(path.join(installed, '..', '..', 'target')) && !fs.existsSync(path.join(installed, '..', '..', 'build')));
    // koffi brings its own platform package (@koromix/koffi-linux-x64, an optional dependency).
    const tree = Object.keys(JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', '.package-lock.json'), 'utf8')).packages)
      .map((p) => p.replace(/^node_modules\//, '')).sort();
    check('node_modules holds harel-transport and koffi (with its platform package) only',
      tree.includes('harel-transport') && tree.includes('koffi') &&
        tree.every((p) => p === 'harel-transport' || p === 'koffi' || /^@koromix\/koffi-[a-z0-9-]+$/.test(p)),
      tree.join(' '));
    const dynamic = run('readelf', ['-d', lib]);
    const sections = run('readelf', ['-S', '-W', lib]);
    check('the library is stripped, soname libharel_transport.so.1',
      /\(SONAME\)\s+Library soname: \[libharel_transport\.so\.1\]/.test(dynamic) && !/\s\.symtab\s/.test(sections),
      `${fs.statSync(lib).size} bytes`);
    check('the poll addon is stripped and exports napi_register_module_v1',
      !/\s\.symtab\s/.test(run('readelf', ['-S', '-W', addon])) && /napi_register_module_v1/.test(run('readelf', ['--dyn-syms', '-W', addon])),
      `${fs.statSync(addon).size} bytes`);

    fs.copyFileSync(path.join(__dirname, 'smoke.js'), path.join(dir, 'smoke.js'));
    const smoke = spawnSync(process.execPath, ['smoke.js'], { cwd: dir, env, encoding: 'utf8' });
    console.log('$ node smoke.js');
    process.stdout.write(smoke.stdout + smoke.stderr);
    for (const line of smoke.stdout.split('\n')) {
      if (line.startsWith('ok - ')) passed += 1;
      else if (line.startsWith('not ok - ')) failed += 1;
    }
    if (smoke.status !== 0 && !/^not ok - /m.test(smoke.stdout)) check('node smoke.js', false, `exited with ${smoke.status ?? smoke.signal}`);

    const esm = `import { Transport, libraryInfo } from 'harel-transport';
      const q = await Transport.open('esm.db');
      await q.publish('g', { kind: 'esm' });
      const lease = await q.claim('w');
      await q.ack(lease);
      await q.close();
      console.log(JSON.stringify({ kind: lease.event.kind, path: libraryInfo().path }));`;
    const out = JSON.parse(run(process.execPath, ['--input-type=module', '-e', esm], { cwd: dir, env }));
    check('import from an ES module: publish, claim, ack', out.kind === 'esm' && out.path === lib, JSON.stringify(out));
  } finally {
    if (process.env.HAREL_NPM_KEEP) console.log(`npm: kept ${dir}`);
    else fs.rmSync(dir, { recursive: true, force: true });
  }
}

try {
  main();
} catch (e) {
  check('npm package test', false, e.message);
}
console.log(`npm: ${passed} passed, ${failed} failed (${((Date.now() - started) / 1000).toFixed(1)} s)`);
process.exitCode = failed ? 1 : 0;

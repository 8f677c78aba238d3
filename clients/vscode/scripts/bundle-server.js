#!/usr/bin/env node
// Before `vsce package`: stage what a platform-specific .vsix carries in bundled/, laid out like an
// installation prefix, so the server finds the validator by walking up from its own location
// (server/src/validate/validator_client.cpp find_validator_dir) without any setting:
//
//   bundled/bin/graphmend                                         the server, stripped
//   bundled/share/graphmend/gpu-validator/graphmend_validator/**  the validator (with deploy_runner/)
//   bundled/share/graphmend/docs/rules/*.md                       the rule pages
//
//   node scripts/bundle-server.js --target linux-x64   needs GRAPHMEND_BUNDLE (a built `graphmend`)
//   node scripts/bundle-server.js                      universal package: no server; bundled/ removed
//
// GRAPHMEND_SOURCE_ROOT is the repository the validator and the rule pages come from (default: the one
// this script is in). A stale bundled/ (and the bin/ of older versions) is always removed first.
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const TARGETS = { 'linux-x64': { elfClass: 2, machine: 0x3e, name: 'graphmend' } };

const root = path.resolve(__dirname, '..');
const staging = path.join(root, 'bundled');

function fail(message) {
  console.error(`bundle-server: ${message}`);
  process.exit(1);
}

function parseArgs(argv) {
  let target = null;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--target' && i + 1 < argv.length) target = argv[++i];
    else if (argv[i].startsWith('--target=')) target = argv[i].slice('--target='.length);
    else fail(`unknown argument ${argv[i]}`);
  }
  if (target !== null && !(target in TARGETS)) fail(`unsupported target ${target} (supported: ${Object.keys(TARGETS).join(', ')})`);
  return { target };
}

/** Refuses an ELF file built for another platform than the package's. */
function checkElf(file, target) {
  const fd = fs.openSync(file, 'r');
  const head = Buffer.alloc(20);
  const n = fs.readSync(fd, head, 0, head.length, 0);
  fs.closeSync(fd);
  const isElf = n >= 20 && head.readUInt32BE(0) === 0x7f454c46;
  if (!isElf) {
    console.warn(`bundle-server: ${file} is not an ELF executable; bundling it as it is`);
    return false;
  }
  const want = TARGETS[target];
  if (head[4] !== want.elfClass || head.readUInt16LE(18) !== want.machine) {
    fail(`${file} is not a ${target} executable (ELF class ${head[4]}, machine 0x${head.readUInt16LE(18).toString(16)})`);
  }
  return true;
}

/** Strips the copy in place (never the original): `strip --strip-all`, else `objcopy --strip-all`. */
function strip(copy) {
  for (const tool of ['strip', 'objcopy']) {
    try {
      execFileSync(tool, ['--strip-all', copy], { stdio: ['ignore', 'ignore', 'pipe'] });
      return tool;
    } catch (error) {
      if (error.code !== 'ENOENT') fail(`${tool} --strip-all ${copy} failed: ${String(error.stderr || error.message).trim()}`);
    }
  }
  console.warn('bundle-server: neither strip nor objcopy found; bundling the server unstripped');
  return null;
}

/** Copies a folder, leaving out __pycache__ and compiled Python. */
function copyTree(from, to) {
  fs.cpSync(from, to, {
    recursive: true,
    filter: (src) => {
      const base = path.basename(src);
      return base !== '__pycache__' && !base.endsWith('.pyc') && !base.endsWith('.pyo');
    },
  });
}

function main() {
  const { target } = parseArgs(process.argv.slice(2));
  fs.rmSync(staging, { recursive: true, force: true });
  fs.rmSync(path.join(root, 'bin'), { recursive: true, force: true });
  const source = process.env.GRAPHMEND_BUNDLE;
  if (target === null) {
    if (source) fail('GRAPHMEND_BUNDLE is set: a bundled server needs a platform package (npm run package:linux-x64, or make vsix)');
    console.log('bundle-server: universal package, without a bundled server');
    return;
  }
  if (!source) fail(`--target ${target} needs GRAPHMEND_BUNDLE, the graphmend executable to bundle`);
  const from = path.resolve(source);
  let st;
  try {
    st = fs.statSync(from);
  } catch {
    fail(`GRAPHMEND_BUNDLE=${source}: no such file`);
  }
  if (!st.isFile()) fail(`GRAPHMEND_BUNDLE=${source} is not a file`);

  const sourceRoot = path.resolve(process.env.GRAPHMEND_SOURCE_ROOT || path.join(root, '..', '..'));
  const validator = path.join(sourceRoot, 'gpu-validator', 'graphmend_validator');
  const rules = path.join(sourceRoot, 'docs', 'rules');
  if (!fs.existsSync(path.join(validator, '__init__.py'))) fail(`no validator at ${validator} (set GRAPHMEND_SOURCE_ROOT)`);
  if (!fs.existsSync(path.join(validator, 'deploy_runner', 'runner.cpp'))) fail(`no deploy runner in ${validator}`);
  const pages = fs.existsSync(rules) ? fs.readdirSync(rules).filter((f) => f.endsWith('.md')).sort() : [];
  if (pages.length === 0) fail(`no rule pages in ${rules}`);

  const binDir = path.join(staging, 'bin');
  const exe = path.join(binDir, TARGETS[target].name);
  fs.mkdirSync(binDir, { recursive: true });
  const elf = checkElf(from, target);
  fs.copyFileSync(from, exe);
  fs.chmodSync(exe, 0o755);
  const stripped = elf ? strip(exe) : null;
  fs.chmodSync(exe, 0o755);

  const share = path.join(staging, 'share', 'graphmend');
  copyTree(validator, path.join(share, 'gpu-validator', 'graphmend_validator'));
  fs.mkdirSync(path.join(share, 'docs', 'rules'), { recursive: true });
  for (const page of pages) fs.copyFileSync(path.join(rules, page), path.join(share, 'docs', 'rules', page));

  const size = (file) => `${(fs.statSync(file).size / 1e6).toFixed(1)} MB`;
  console.log(
    `bundle-server: ${target}: bundled/bin/${TARGETS[target].name} from ${from} (${size(from)}` +
      (stripped ? `, ${size(exe)} after ${stripped} --strip-all)` : ')') +
      `, the validator from ${validator}, ${pages.length} rule pages`,
  );
}

main();

// The platform package (`npm run package:linux-x64`, what `make vsix` runs): the stripped server, the
// validator and the rule pages in bundled/, laid out so that the server finds the validator by itself,
// and a manifest that declares linux-x64 only. Packs the real server ($GRAPHMEND_VSIX_BINARY, else
// $GRAPHMEND_BIN, else ../../build/graphmend) in a copy of the extension's sources.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { findServer } from '../../src/discovery';
import { EXTENSION_ROOT, REPO_ROOT, manifest } from '../paths';
import { ZipEntry, readZip } from '../zip';
import { serverBinary } from './session';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const VALIDATOR = 'extension/bundled/share/graphmend/gpu-validator/graphmend_validator/';
const RULES = 'extension/bundled/share/graphmend/docs/rules/';
const BINARY = 'extension/bundled/bin/graphmend';

/** Names of an ELF file's sections (64-bit little-endian). */
function elfSections(data: Buffer): string[] {
  assert.equal(data.readUInt32BE(0), 0x7f454c46, 'an ELF file');
  const shoff = Number(data.readBigUInt64LE(0x28));
  const shentsize = data.readUInt16LE(0x3a);
  const shnum = data.readUInt16LE(0x3c);
  const strtab = shoff + data.readUInt16LE(0x3e) * shentsize;
  const strOffset = Number(data.readBigUInt64LE(strtab + 0x18));
  const names: string[] = [];
  for (let i = 0; i < shnum; i++) {
    const nameAt = strOffset + data.readUInt32LE(shoff + i * shentsize);
    names.push(data.toString('latin1', nameAt, data.indexOf(0, nameAt)));
  }
  return names;
}

describe('npm run package:linux-x64 (make vsix)', { skip: process.platform !== 'linux' || process.arch !== 'x64' }, () => {
  const binary = path.resolve(process.env.GRAPHMEND_VSIX_BINARY || serverBinary());
  let work: string;
  let sourceRoot: string;
  let extracted: string;
  let entries: Map<string, ZipEntry>;
  let log: string;
  let seconds: number;

  before(() => {
    assert.ok(fs.existsSync(binary), `no server at ${binary}: build it (make build) or set GRAPHMEND_VSIX_BINARY`);
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'gm-vsix-x64-'));
    const ext = path.join(work, 'ext');
    for (const item of ['package.json', 'package-lock.json', 'README.md', '.vscodeignore', 'tsconfig.json', 'src', 'scripts']) {
      fs.cpSync(path.join(EXTENSION_ROOT, item), path.join(ext, item), { recursive: true });
    }
    fs.symlinkSync(path.join(EXTENSION_ROOT, 'node_modules'), path.join(ext, 'node_modules'), 'dir');
    // The validator and the rule pages of this repository, plus Python's byte code, which must stay out.
    sourceRoot = path.join(work, 'src-root');
    fs.cpSync(path.join(REPO_ROOT, 'gpu-validator'), path.join(sourceRoot, 'gpu-validator'), { recursive: true });
    fs.cpSync(path.join(REPO_ROOT, 'docs', 'rules'), path.join(sourceRoot, 'docs', 'rules'), { recursive: true });
    for (const dir of ['', 'deploy_runner']) {
      const cache = path.join(sourceRoot, 'gpu-validator', 'graphmend_validator', dir, '__pycache__');
      fs.mkdirSync(cache, { recursive: true });
      fs.writeFileSync(path.join(cache, 'x.cpython-311.pyc'), 'bytecode');
    }
    const started = Date.now();
    log = execFileSync(npm, ['run', '-s', 'package:linux-x64'], {
      cwd: ext,
      env: { ...process.env, GRAPHMEND_BUNDLE: binary, GRAPHMEND_SOURCE_ROOT: sourceRoot },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    seconds = (Date.now() - started) / 1000;
    const vsix = path.join(ext, 'graphmend-linux-x64.vsix');
    entries = readZip(fs.readFileSync(vsix));
    // Unpacked as VS Code installs it: the files with their modes.
    extracted = path.join(work, 'installed');
    for (const [name, entry] of entries) {
      if (name.endsWith('/')) continue;
      const file = path.join(extracted, name);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, entry.read(), { mode: entry.mode & 0o777 || 0o644 });
    }
  });

  after(() => {
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it('packs in reasonable time', () => {
    assert.ok(seconds < 120, `${seconds} s`);
    assert.match(log, /bundled\/bin\/graphmend from /);
  });

  it('carries the server, executable and stripped, never touching the original', () => {
    const server = entries.get(BINARY);
    assert.ok(server, [...entries.keys()].join('\n'));
    assert.equal(server.mode & 0o111, 0o111, `mode ${server.mode.toString(8)}`);
    const data = server.read();
    const sections = elfSections(data);
    assert.ok(!sections.includes('.symtab') && !sections.some((s) => s.startsWith('.debug')), sections.join(' '));
    assert.ok(data.length <= fs.statSync(binary).size);
    // The install keeps the mode, and the server runs.
    const installed = path.join(extracted, BINARY);
    assert.ok(fs.statSync(installed).mode & 0o100);
    assert.match(execFileSync(installed, ['--version'], { encoding: 'utf8' }), /^graphmend \d+\.\d+\.\d+/);
  });

  it('carries the validator, with its deploy runner and without byte code', () => {
    for (const file of ['__init__.py', '__main__.py', 'deploy_runner/runner.cpp', 'deploy_runner/CMakeLists.txt']) {
      assert.ok(entries.has(VALIDATOR + file), file);
    }
    const source = path.join(REPO_ROOT, 'gpu-validator', 'graphmend_validator');
    assert.equal(entries.get(VALIDATOR + 'deploy_runner/runner.cpp')!.read().toString(),
      fs.readFileSync(path.join(source, 'deploy_runner', 'runner.cpp'), 'utf8'));
    assert.deepEqual([...entries.keys()].filter((n) => n.includes('__pycache__') || n.endsWith('.pyc')), []);
    const packed = [...entries.keys()].filter((n) => n.startsWith(VALIDATOR)).map((n) => n.slice(VALIDATOR.length)).sort();
    const expected = (fs.readdirSync(source, { recursive: true }) as string[])
      .filter((f) => !f.includes('__pycache__') && fs.statSync(path.join(source, f)).isFile())
      .sort();
    assert.deepEqual(packed, expected);
  });

  it('carries every rule page', () => {
    const pages = fs.readdirSync(path.join(REPO_ROOT, 'docs', 'rules')).filter((f) => f.endsWith('.md')).sort();
    assert.ok(pages.includes('GM101.md'));
    const packed = [...entries.keys()].filter((n) => n.startsWith(RULES)).map((n) => n.slice(RULES.length)).sort();
    assert.deepEqual(packed, pages);
  });

  it('lets the installed server find the bundled validator without settings', () => {
    // A stand-in interpreter that records the PYTHONPATH the server gives the validator, then fails.
    const fake = path.join(work, 'fake-python');
    const record = path.join(work, 'pythonpath.txt');
    fs.writeFileSync(fake, `#!/bin/sh\nprintf '%s' "$PYTHONPATH" > '${record}'\nexit 3\n`, { mode: 0o755 });
    const target = path.join(work, 'm.py');
    fs.writeFileSync(target, 'def make():\n    return None\n');
    const env = { ...process.env };
    delete env.GRAPHMEND_VALIDATOR_DIR;
    spawnSync(path.join(extracted, BINARY), ['validate', `${target}::make`, '--python', fake], { env, cwd: work, encoding: 'utf8', timeout: 60000 });
    const first = fs.readFileSync(record, 'utf8').split(':')[0];
    assert.equal(first, path.join(extracted, 'extension', 'bundled', 'share', 'graphmend', 'gpu-validator'));
  });

  it('is found by the extension as its bundled server', () => {
    const found = findServer({
      configuredPath: null,
      extensionPath: path.join(extracted, 'extension'),
      workspaceFolders: [work],
      env: { PATH: '' },
      platform: 'linux',
      importStrategy: 'useBundled',
    });
    assert.deepEqual(found, { ok: true, command: path.join(extracted, BINARY), source: 'bundled' });
  });

  it('declares linux-x64, and only that', () => {
    const vsixManifest = entries.get('extension.vsixmanifest')!.read().toString();
    const targets = [...vsixManifest.matchAll(/TargetPlatform="([^"]*)"/g)].map((m) => m[1]);
    assert.deepEqual(targets, ['linux-x64']);
    assert.match(vsixManifest, new RegExp(`<Identity [^>]*Id="${manifest.name}"[^>]*Version="${manifest.version.replace(/\./g, '\\.')}"`));
    const inner = JSON.parse(entries.get('extension/package.json')!.read().toString());
    assert.equal(inner.name, manifest.name);
    assert.equal(inner.version, manifest.version);
  });

  it('contains nothing but the extension, the manifest and bundled/', () => {
    const other = [...entries.keys()].filter(
      (n) => n.startsWith('extension/') && !n.startsWith('extension/bundled/') &&
        !['extension/dist/extension.js', 'extension/package.json', 'extension/readme.md'].includes(n),
    );
    assert.deepEqual(other, []);
  });
});

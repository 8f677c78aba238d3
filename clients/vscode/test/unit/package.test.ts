// `npm run package` builds the universal .vsix: the bundled extension without a server (the
// platform package with the server, `npm run package:linux-x64` / `make vsix`, is checked in
// test/integration/vsix.test.ts), and the extension in it loads and exports activate/deactivate.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { EXTENSION_ROOT, manifest } from '../paths';
import { installVscodeShim } from '../vscodeShim';
import { ZipEntry, readZip } from '../zip';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

describe('npm run package', { skip: process.platform === 'win32' }, () => {
  let work: string;
  let entries: Map<string, ZipEntry>;

  before(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'gm-vsix-'));
    // A copy of the extension's sources, so packaging does not touch the working tree.
    for (const item of ['package.json', 'package-lock.json', 'README.md', '.vscodeignore', 'tsconfig.json', 'src', 'scripts']) {
      fs.cpSync(path.join(EXTENSION_ROOT, item), path.join(work, item), { recursive: true });
    }
    fs.symlinkSync(path.join(EXTENSION_ROOT, 'node_modules'), path.join(work, 'node_modules'), 'dir');
    // A stale staging folder of an earlier platform package must not end up in this one.
    fs.mkdirSync(path.join(work, 'bundled', 'bin'), { recursive: true });
    fs.writeFileSync(path.join(work, 'bundled', 'bin', 'graphmend'), 'stale', { mode: 0o755 });
    const env = { ...process.env };
    delete env.GRAPHMEND_BUNDLE;
    execFileSync(npm, ['run', '-s', 'package'], { cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'] });
    entries = readZip(fs.readFileSync(path.join(work, 'graphmend.vsix')));
  });

  after(() => {
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it('contains the bundle, the manifest and the README, and nothing else', () => {
    const files = [...entries.keys()].filter((n) => n.startsWith('extension/')).sort();
    assert.deepEqual(files, ['extension/dist/extension.js', 'extension/package.json', 'extension/readme.md']);
  });

  it('declares no target platform', () => {
    const vsixManifest = entries.get('extension.vsixmanifest')!.read().toString();
    assert.doesNotMatch(vsixManifest, /TargetPlatform=/);
  });

  it('refuses to put a server into the universal package', () => {
    const r = spawnSync(npm, ['run', '-s', 'package'], {
      cwd: work,
      env: { ...process.env, GRAPHMEND_BUNDLE: path.join(work, 'package.json') },
      encoding: 'utf8',
    });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /a bundled server needs a platform package \(npm run package:linux-x64, or make vsix\)/);
  });

  it('bundles vscode-languageclient and leaves only vscode external', () => {
    const code = entries.get('extension/dist/extension.js')!.read().toString();
    const requires = new Set([...code.matchAll(/require\("([^"]+)"\)/g)].map((m) => m[1]));
    const external = [...requires].filter((r) => !r.startsWith('node:') && !isBuiltin(r));
    assert.deepEqual(external, ['vscode']);
  });

  it('loads and exports activate and deactivate', () => {
    installVscodeShim();
    const file = path.join(work, 'extracted-extension.js');
    fs.writeFileSync(file, entries.get('extension/dist/extension.js')!.read());
    const ext = require(file);
    assert.equal(typeof ext.activate, 'function');
    assert.equal(typeof ext.deactivate, 'function');
  });

  it('declares the version of package.json', () => {
    const inner = JSON.parse(entries.get('extension/package.json')!.read().toString());
    assert.equal(inner.version, manifest.version);
    const vsixManifest = entries.get('extension.vsixmanifest')!.read().toString();
    assert.match(vsixManifest, new RegExp(`Version="${manifest.version.replace(/\./g, '\\.')}"`));
  });
});

function isBuiltin(name: string): boolean {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('node:module').builtinModules.includes(name);
}

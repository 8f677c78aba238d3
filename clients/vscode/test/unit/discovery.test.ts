import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { DiscoveryInput, expandPath, findServer, isExecutableFile } from '../../src/discovery';

function input(files: string[], over: Partial<DiscoveryInput> = {}): DiscoveryInput {
  const set = new Set(files);
  return {
    configuredPath: null,
    extensionPath: '/ext',
    workspaceFolders: ['/ws'],
    env: { PATH: '/usr/local/bin:/usr/bin' },
    platform: 'linux',
    homedir: '/home/u',
    isExecutable: (f) => set.has(f),
    ...over,
  };
}

describe('findServer', () => {
  it('prefers the setting', () => {
    const r = findServer(input(['/opt/gm', '/ext/bin/graphmend', '/usr/bin/graphmend'], { configuredPath: '/opt/gm' }));
    assert.deepEqual(r, { ok: true, command: '/opt/gm', source: 'setting' });
  });

  it('then the bundled binary', () => {
    const r = findServer(input(['/ext/bin/graphmend', '/usr/bin/graphmend']));
    assert.deepEqual(r, { ok: true, command: '/ext/bin/graphmend', source: 'bundled' });
  });

  it('then PATH, in order', () => {
    const r = findServer(input(['/usr/bin/graphmend', '/usr/local/bin/graphmend']));
    assert.deepEqual(r, { ok: true, command: '/usr/local/bin/graphmend', source: 'PATH' });
  });

  it('reports every place it looked', () => {
    const r = findServer(input([]));
    assert.equal(r.ok, false);
    if (r.ok) return;
    assert.deepEqual(r.tried, ['/ext/bin/graphmend', '/usr/local/bin/graphmend', '/usr/bin/graphmend']);
    assert.match(r.message, /graphmend\.path/);
  });

  it('never falls back from a wrong setting', () => {
    const r = findServer(input(['/ext/bin/graphmend'], { configuredPath: '/nope/graphmend' }));
    assert.equal(r.ok, false);
    if (r.ok) return;
    assert.match(r.message, /"\/nope\/graphmend".*not an executable file/);
  });

  it('resolves relative settings against the first workspace folder', () => {
    const r = findServer(input(['/ws/build/graphmend'], { configuredPath: 'build/graphmend', workspaceFolders: ['/ws', '/other'] }));
    assert.deepEqual(r, { ok: true, command: '/ws/build/graphmend', source: 'setting' });
  });

  it('looks a bare name up on PATH', () => {
    const r = findServer(input(['/usr/bin/graphmend-dev'], { configuredPath: 'graphmend-dev' }));
    assert.deepEqual(r, { ok: true, command: '/usr/bin/graphmend-dev', source: 'setting' });
  });

  it('uses PATHEXT and ; on Windows', () => {
    const r = findServer(
      input(['C:\\tools\\graphmend.EXE'], {
        platform: 'win32',
        extensionPath: 'C:\\ext',
        workspaceFolders: ['C:\\ws'],
        env: { Path: 'C:\\Windows;"C:\\tools"', PATHEXT: '.COM;.EXE' },
      }),
    );
    assert.deepEqual(r, { ok: true, command: 'C:\\tools\\graphmend.EXE', source: 'PATH' });
  });

  it('finds the bundled graphmend.exe on Windows', () => {
    const r = findServer(input(['C:\\ext\\bin\\graphmend.exe'], { platform: 'win32', extensionPath: 'C:\\ext', env: {} }));
    assert.deepEqual(r, { ok: true, command: 'C:\\ext\\bin\\graphmend.exe', source: 'bundled' });
  });
});

describe('expandPath', () => {
  it('expands variables and ~', () => {
    const i = input([], { env: { GM_HOME: '/gm' } });
    assert.deepEqual(expandPath('~/bin/graphmend', i), { path: '/home/u/bin/graphmend' });
    assert.deepEqual(expandPath('${userHome}/x', i), { path: '/home/u/x' });
    assert.deepEqual(expandPath('${workspaceFolder}/build/graphmend', i), { path: '/ws/build/graphmend' });
    assert.deepEqual(expandPath('${env:GM_HOME}/graphmend', i), { path: '/gm/graphmend' });
  });

  it('refuses what it cannot expand', () => {
    assert.deepEqual(expandPath('${config:foo}/graphmend', input([])), { error: 'unknown variable ${config:foo}' });
    const noFolder = input([], { workspaceFolders: [] });
    assert.ok('error' in expandPath('${workspaceFolder}/graphmend', noFolder));
    assert.ok('error' in expandPath('build/graphmend', noFolder));
  });
});

describe('isExecutableFile', () => {
  it('checks the real file system', { skip: process.platform === 'win32' }, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gm-disc-'));
    try {
      const exe = path.join(dir, 'graphmend');
      fs.writeFileSync(exe, '#!/bin/sh\n');
      assert.equal(isExecutableFile(exe), false);
      fs.chmodSync(exe, 0o755);
      assert.equal(isExecutableFile(exe), true);
      assert.equal(isExecutableFile(dir), false);
      assert.equal(isExecutableFile(path.join(dir, 'missing')), false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

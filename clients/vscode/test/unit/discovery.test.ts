import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { DiscoveryInput, environmentExecutable, expandPath, findServer, isExecutableFile } from '../../src/discovery';
import { Interpreter } from '../../src/interpreter';

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
    const r = findServer(input(['/opt/gm', '/ext/bundled/bin/graphmend', '/usr/bin/graphmend'], { configuredPath: '/opt/gm' }));
    assert.deepEqual(r, { ok: true, command: '/opt/gm', source: 'setting' });
  });

  it('then the bundled binary', () => {
    const r = findServer(input(['/ext/bundled/bin/graphmend', '/usr/bin/graphmend']));
    assert.deepEqual(r, { ok: true, command: '/ext/bundled/bin/graphmend', source: 'bundled' });
  });

  it('then PATH, in order', () => {
    const r = findServer(input(['/usr/bin/graphmend', '/usr/local/bin/graphmend']));
    assert.deepEqual(r, { ok: true, command: '/usr/local/bin/graphmend', source: 'PATH' });
  });

  it('reports every place it looked', () => {
    const r = findServer(input([]));
    assert.equal(r.ok, false);
    if (r.ok) return;
    assert.deepEqual(r.tried, ['/ext/bundled/bin/graphmend', '/usr/local/bin/graphmend', '/usr/bin/graphmend']);
    assert.match(r.message, /graphmend\.path/);
  });

  it('never falls back from a wrong setting', () => {
    const r = findServer(input(['/ext/bundled/bin/graphmend'], { configuredPath: '/nope/graphmend' }));
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
    const r = findServer(input(['C:\\ext\\bundled\\bin\\graphmend.exe'], { platform: 'win32', extensionPath: 'C:\\ext', env: {} }));
    assert.deepEqual(r, { ok: true, command: 'C:\\ext\\bundled\\bin\\graphmend.exe', source: 'bundled' });
  });
});

describe('findServer with graphmend.importStrategy', () => {
  const venv: Interpreter = { python: '/ws/.venv/bin/python', source: 'workspace venv' };
  const all = ['/ws/.venv/bin/graphmend', '/ext/bundled/bin/graphmend', '/usr/bin/graphmend'];

  it('fromEnvironment (the default) takes the graphmend next to the interpreter first', () => {
    assert.deepEqual(findServer(input(all, { interpreter: venv })), { ok: true, command: '/ws/.venv/bin/graphmend', source: 'environment' });
    assert.deepEqual(findServer(input(all, { interpreter: venv, importStrategy: 'fromEnvironment' })),
      { ok: true, command: '/ws/.venv/bin/graphmend', source: 'environment' });
  });

  it('fromEnvironment falls back to the bundled binary, then PATH', () => {
    const noEnv = findServer(input(['/ext/bundled/bin/graphmend', '/usr/bin/graphmend'], { interpreter: venv }));
    assert.deepEqual(noEnv, { ok: true, command: '/ext/bundled/bin/graphmend', source: 'bundled' });
    const r = findServer(input([], { interpreter: venv }));
    assert.equal(r.ok, false);
    if (r.ok) return;
    assert.deepEqual(r.tried, ['/ws/.venv/bin/graphmend', '/ext/bundled/bin/graphmend', '/usr/local/bin/graphmend', '/usr/bin/graphmend']);
  });

  it('uses the Python extension\'s interpreter and the setting alike', () => {
    const picked: Interpreter = { python: '/home/u/envs/t/bin/python3.11', source: 'python extension' };
    assert.deepEqual(findServer(input(['/home/u/envs/t/bin/graphmend', ...all], { interpreter: picked })),
      { ok: true, command: '/home/u/envs/t/bin/graphmend', source: 'environment' });
    const set: Interpreter = { python: '~/envs/t/bin/python', source: 'setting' };
    assert.deepEqual(findServer(input(['/home/u/envs/t/bin/graphmend', ...all], { interpreter: set })),
      { ok: true, command: '/home/u/envs/t/bin/graphmend', source: 'environment' });
  });

  it('does not look next to the default python3', () => {
    const r = findServer(input(all, { interpreter: { python: 'python3', source: 'default' } }));
    assert.deepEqual(r, { ok: true, command: '/ext/bundled/bin/graphmend', source: 'bundled' });
  });

  it('useBundled always takes the bundled binary, and never another one', () => {
    assert.deepEqual(findServer(input(all, { interpreter: venv, importStrategy: 'useBundled' })),
      { ok: true, command: '/ext/bundled/bin/graphmend', source: 'bundled' });
    const r = findServer(input(['/ws/.venv/bin/graphmend', '/usr/bin/graphmend'], { interpreter: venv, importStrategy: 'useBundled' }));
    assert.equal(r.ok, false);
    if (r.ok) return;
    assert.deepEqual(r.tried, ['/ext/bundled/bin/graphmend']);
    assert.match(r.message, /importStrategy is "useBundled", but this extension carries no bundled server/);
  });

  it('graphmend.path still wins', () => {
    for (const importStrategy of ['fromEnvironment', 'useBundled'] as const) {
      assert.deepEqual(findServer(input(['/opt/gm', ...all], { configuredPath: '/opt/gm', interpreter: venv, importStrategy })),
        { ok: true, command: '/opt/gm', source: 'setting' });
    }
  });

  it('does not run the environment\'s graphmend in an untrusted workspace', () => {
    assert.deepEqual(findServer(input(all, { interpreter: venv, trusted: false })),
      { ok: true, command: '/ext/bundled/bin/graphmend', source: 'bundled' });
  });

  it('puts graphmend.exe next to python.exe on Windows', () => {
    const win = input([], { platform: 'win32', extensionPath: 'C:\\ext', workspaceFolders: ['C:\\ws'], env: {} });
    assert.equal(environmentExecutable({ python: 'C:\\ws\\.venv\\Scripts\\python.exe', source: 'workspace venv' }, win),
      'C:\\ws\\.venv\\Scripts\\graphmend.exe');
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

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { DOCUMENT_SELECTOR, serverProcess } from '../../src/client';
import { FIX_ALL_KIND, parseTarget, pickFixAll, serverArgs, statusText, suggestTarget, validateArgs } from '../../src/server';
import { DEFAULT_SETTINGS } from '../../src/settings';

describe('serverArgs', () => {
  it('starts `graphmend server` with the extra arguments', () => {
    assert.deepEqual(serverArgs(DEFAULT_SETTINGS), ['server']);
    assert.deepEqual(serverArgs({ ...DEFAULT_SETTINGS, args: ['--log-file', '/tmp/x'] }), ['server', '--log-file', '/tmp/x']);
  });
  it('does not repeat the subcommand', () => {
    assert.deepEqual(serverArgs({ ...DEFAULT_SETTINGS, args: ['server', '--x'] }), ['server', '--x']);
  });
});

describe('serverProcess', () => {
  it('runs in the first workspace folder', () => {
    const found = { ok: true as const, command: '/b/graphmend', source: 'PATH' as const };
    assert.deepEqual(serverProcess(found, DEFAULT_SETTINGS, ['/ws', '/w2']), { command: '/b/graphmend', args: ['server'], cwd: '/ws' });
    assert.deepEqual(serverProcess(found, DEFAULT_SETTINGS, []), { command: '/b/graphmend', args: ['server'] });
  });
  it('selects Python files, unsaved Python buffers and the Python cells of notebooks', () => {
    assert.deepEqual(
      DOCUMENT_SELECTOR.map((s) => (s.notebook !== undefined ? `notebook ${s.notebook}:${s.language}` : `${s.scheme}:${s.language}`)),
      ['file:python', 'untitled:python', 'vscode-notebook-cell:python', 'notebook *:python'],
    );
  });
});

describe('validate', () => {
  it('builds the command line', () => {
    assert.deepEqual(validateArgs('m.py::make', DEFAULT_SETTINGS), ['validate', 'm.py::make']);
    assert.deepEqual(validateArgs('m.py::make', { ...DEFAULT_SETTINGS, validatorPython: '/v/python' }), [
      'validate',
      'm.py::make',
      '--python',
      '/v/python',
    ]);
  });
  it('parses targets', () => {
    assert.deepEqual(parseTarget('models/bert.py::make_model'), { file: 'models/bert.py', callable: 'make_model' });
    assert.deepEqual(parseTarget(' a.py::f '), { file: 'a.py', callable: 'f' });
    assert.deepEqual(parseTarget('a.py::pkg.factory'), { file: 'a.py', callable: 'pkg.factory' });
    assert.deepEqual(parseTarget('C:\\m\\a.py::f'), { file: 'C:\\m\\a.py', callable: 'f' });
    assert.ok('error' in parseTarget(''));
    assert.ok('error' in parseTarget('a.py'));
    assert.ok('error' in parseTarget('a.txt::f'));
    assert.ok('error' in parseTarget('a.py::1f'));
    assert.deepEqual(parseTarget('a.py::'), { error: 'name the factory after ::' });
  });
  it('suggests the file\'s factory', () => {
    assert.equal(suggestTarget('m/model.py', 'import torch\n\ndef example():\n    return 1\n'), 'm/model.py::example');
    assert.equal(suggestTarget('m.py', 'def make_model():\n  pass\ndef example(): pass\n'), 'm.py::example');
    assert.equal(suggestTarget('m.py', 'class A:\n    def example(self): pass\n'), 'm.py::');
    assert.equal(suggestTarget('m.py', 'def build_model(dim=4):\n  pass\n'), 'm.py::build_model');
  });
});

describe('pickFixAll', () => {
  it('finds the fix-all action by kind, skipping commands and quick fixes', () => {
    const actions = [
      { title: 'cmd', command: 'graphmend.applyAutofix' },
      { title: 'quick', kind: 'quickfix' },
      { title: 'all', kind: FIX_ALL_KIND, edit: { changes: {} } },
    ];
    assert.equal(pickFixAll(actions)?.title, 'all');
  });
  it('accepts sub-kinds but not other fix-all providers', () => {
    assert.equal(pickFixAll([{ title: 'ruff', kind: 'source.fixAll.ruff' }]), undefined);
    assert.equal(pickFixAll([{ title: 'x', kind: 'source.fixAll.graphmendx' }]), undefined);
    assert.equal(pickFixAll([{ title: 'sub', kind: `${FIX_ALL_KIND}.unsafe` }])?.title, 'sub');
    assert.equal(pickFixAll(null), undefined);
  });
});

describe('statusText', () => {
  it('names the version and state', () => {
    assert.deepEqual(statusText('running', '0.1.0'), { text: '$(check) graphmend 0.1.0', detail: 'running', severity: 'information' });
    assert.equal(statusText('failed', undefined, 'not found').severity, 'error');
    assert.equal(statusText('failed', undefined, 'not found').detail, 'not found');
    assert.match(statusText('starting', undefined).text, /sync~spin/);
    assert.equal(statusText('stopped', '1').severity, 'warning');
  });
});

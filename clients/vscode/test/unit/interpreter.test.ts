// The choice of the validator's interpreter, with a fake of the Python extension's API.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
  InterpreterInput,
  PythonExtensionApi,
  chooseInterpreter,
  pythonExtensionInterpreter,
  validatorPython,
} from '../../src/interpreter';

/** The Python extension's `exports`, with `environments.getActiveEnvironmentPath()` answering `active`. */
function fakePythonApi(active: string | undefined, calls: unknown[] = []): PythonExtensionApi {
  return {
    environments: {
      getActiveEnvironmentPath(resource?: unknown) {
        calls.push(resource);
        return active === undefined ? undefined : { id: active, path: active };
      },
    },
  };
}

function input(files: string[], over: Partial<InterpreterInput> = {}): InterpreterInput {
  const set = new Set(files);
  return {
    configured: null,
    pythonApi: undefined,
    workspaceFolders: ['/ws'],
    platform: 'linux',
    isExecutable: (f) => set.has(f),
    ...over,
  };
}

describe('chooseInterpreter', () => {
  it('takes graphmend.validator.python first, without asking the Python extension', () => {
    const calls: unknown[] = [];
    const r = chooseInterpreter(input(['/ws/.venv/bin/python', '/envs/a/bin/python'], {
      configured: '~/venvs/torch/bin/python',
      pythonApi: fakePythonApi('/envs/a/bin/python', calls),
    }));
    assert.deepEqual(r, { python: '~/venvs/torch/bin/python', source: 'setting' });
    assert.deepEqual(calls, []);
  });

  it('then the interpreter selected in the Python extension, for the workspace folder', () => {
    const calls: unknown[] = [];
    const r = chooseInterpreter(input(['/ws/.venv/bin/python', '/envs/a/bin/python'], {
      pythonApi: fakePythonApi('/envs/a/bin/python', calls),
      resource: 'file:///ws',
    }));
    assert.deepEqual(r, { python: '/envs/a/bin/python', source: 'python extension' });
    assert.deepEqual(calls, ['file:///ws']);
  });

  it('accepts an environment folder from the Python extension (conda)', () => {
    const r = chooseInterpreter(input(['/opt/conda/envs/t/bin/python'], { pythonApi: fakePythonApi('/opt/conda/envs/t') }));
    assert.deepEqual(r, { python: '/opt/conda/envs/t/bin/python', source: 'python extension' });
  });

  it('uses the older execution-details API when environments is missing', () => {
    const api: PythonExtensionApi = { settings: { getExecutionDetails: () => ({ execCommand: ['/envs/b/bin/python'] }) } };
    assert.deepEqual(chooseInterpreter(input(['/envs/b/bin/python'], { pythonApi: api })), {
      python: '/envs/b/bin/python',
      source: 'python extension',
    });
  });

  it('then a .venv in the workspace folder, when the Python extension has nothing usable', () => {
    const files = ['/ws/.venv/bin/python'];
    const expected = { python: '/ws/.venv/bin/python', source: 'workspace venv' };
    // Not installed.
    assert.deepEqual(chooseInterpreter(input(files)), expected);
    // Nothing selected: the extension's bare default "python" is not a choice.
    assert.deepEqual(chooseInterpreter(input(files, { pythonApi: fakePythonApi('python') })), expected);
    assert.deepEqual(chooseInterpreter(input(files, { pythonApi: fakePythonApi(undefined) })), expected);
    // A selected interpreter that no longer exists.
    assert.deepEqual(chooseInterpreter(input(files, { pythonApi: fakePythonApi('/gone/bin/python') })), expected);
    // An API that throws, or answers nonsense.
    const throwing: PythonExtensionApi = { environments: { getActiveEnvironmentPath: () => { throw new Error('not ready'); } } };
    assert.deepEqual(chooseInterpreter(input(files, { pythonApi: throwing })), expected);
    const odd = { environments: { getActiveEnvironmentPath: () => ({ path: 42 }) } } as unknown as PythonExtensionApi;
    assert.deepEqual(chooseInterpreter(input(files, { pythonApi: odd })), expected);
  });

  it('also finds venv/ (as the server does)', () => {
    assert.deepEqual(chooseInterpreter(input(['/ws/venv/bin/python'])), { python: '/ws/venv/bin/python', source: 'workspace venv' });
  });

  it('then python3, which is left to the server', () => {
    const r = chooseInterpreter(input([]));
    assert.deepEqual(r, { python: 'python3', source: 'default' });
    assert.equal(validatorPython(r), null);
    assert.deepEqual(chooseInterpreter(input([], { workspaceFolders: [] })), { python: 'python3', source: 'default' });
  });

  it('uses Scripts\\python.exe on Windows', () => {
    const r = chooseInterpreter(input(['C:\\ws\\.venv\\Scripts\\python.exe'], { platform: 'win32', workspaceFolders: ['C:\\ws'] }));
    assert.deepEqual(r, { python: 'C:\\ws\\.venv\\Scripts\\python.exe', source: 'workspace venv' });
  });
});

describe('validatorPython', () => {
  it('sends every chosen interpreter but the default', () => {
    assert.equal(validatorPython({ python: '/envs/a/bin/python', source: 'python extension' }), '/envs/a/bin/python');
    assert.equal(validatorPython({ python: '/ws/.venv/bin/python', source: 'workspace venv' }), '/ws/.venv/bin/python');
    assert.equal(validatorPython({ python: 'python3', source: 'default' }), null);
    assert.equal(validatorPython(undefined), null);
  });
});

describe('pythonExtensionInterpreter', () => {
  it('is null without the extension', () => {
    assert.equal(pythonExtensionInterpreter(undefined, input([])), null);
  });
});

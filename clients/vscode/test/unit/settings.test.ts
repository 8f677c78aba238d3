import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
  DEFAULT_SETTINGS,
  SETTING_KEYS,
  SettingKey,
  Settings,
  configurationItem,
  initializationOptions,
  needsRestart,
  readSettings,
  sameSettings,
  serverSettings,
} from '../../src/settings';

function reader(values: Partial<Record<SettingKey, unknown>>) {
  return (key: SettingKey) => values[key];
}

describe('readSettings', () => {
  it('gives the defaults when nothing is set', () => {
    const { settings, warnings } = readSettings(reader({}));
    assert.deepEqual(settings, DEFAULT_SETTINGS);
    assert.deepEqual(warnings, []);
  });

  it('reads every setting', () => {
    const { settings, warnings } = readSettings(
      reader({
        path: ' /opt/graphmend/bin/graphmend ',
        args: ['--log-file', '/tmp/gm.log'],
        importStrategy: 'useBundled',
        'validator.python': '/venv/bin/python',
        configurationPreference: 'filesystemFirst',
        select: ['GM1', 'gm201'],
        ignore: ['GM105'],
        scope: 'all',
        run: 'onSave',
        fixAll: false,
        unsafeFixes: true,
        'validate.enable': false,
        logLevel: 'debug',
        'trace.server': 'verbose',
      }),
    );
    assert.deepEqual(warnings, []);
    assert.deepEqual(settings, {
      path: '/opt/graphmend/bin/graphmend',
      args: ['--log-file', '/tmp/gm.log'],
      importStrategy: 'useBundled',
      validatorPython: '/venv/bin/python',
      configurationPreference: 'filesystemFirst',
      select: ['GM1', 'GM201'],
      ignore: ['GM105'],
      scope: 'all',
      run: 'onSave',
      fixAll: false,
      unsafeFixes: true,
      validateEnable: false,
      logLevel: 'debug',
      traceServer: 'verbose',
    } satisfies Settings);
  });

  it('treats empty strings as unset', () => {
    const { settings } = readSettings(reader({ path: '   ', 'validator.python': '' }));
    assert.equal(settings.path, null);
    assert.equal(settings.validatorPython, null);
  });

  it('falls back with a warning on wrong types and values', () => {
    const { settings, warnings } = readSettings(
      reader({ run: 'always', fixAll: 'yes', logLevel: 'loud', args: '--foo', select: ['GM1', 'E501', 3], scope: 'everything' }),
    );
    assert.equal(settings.run, 'onType');
    assert.equal(settings.scope, 'compiled');
    assert.equal(settings.fixAll, true);
    assert.equal(settings.logLevel, 'info');
    assert.deepEqual(settings.args, []);
    assert.deepEqual(settings.select, ['GM1']);
    assert.equal(warnings.length, 7, warnings.join('\n'));
    assert.ok(warnings.some((w) => w.includes('graphmend.run') && w.includes('onType, onSave')));
    assert.ok(warnings.some((w) => w.includes('"E501"')));
    assert.ok(warnings.some((w) => w.includes('graphmend.args')));
  });

  it('checks graphmend.importStrategy', () => {
    assert.equal(readSettings(reader({})).settings.importStrategy, 'fromEnvironment');
    assert.equal(readSettings(reader({ importStrategy: 'useBundled' })).settings.importStrategy, 'useBundled');
    const { settings, warnings } = readSettings(reader({ importStrategy: 'fromPath' }));
    assert.equal(settings.importStrategy, 'fromEnvironment');
    assert.deepEqual(warnings, ['graphmend.importStrategy must be one of fromEnvironment, useBundled; using fromEnvironment']);
  });

  it('deduplicates codes', () => {
    const { settings } = readSettings(reader({ ignore: ['GM101', 'gm101', 'GM1'] }));
    assert.deepEqual(settings.ignore, ['GM101', 'GM1']);
  });
});

describe('serverSettings', () => {
  it('leaves out empty select/ignore so pyproject.toml applies', () => {
    const out = serverSettings(DEFAULT_SETTINGS, { trusted: true });
    assert.deepEqual(out, {
      run: 'onType',
      fixAll: true,
      unsafeFixes: false,
      validate: { enable: true },
      validator: {},
      logLevel: 'info',
    });
  });

  it('carries every server-side setting and none of the client-side ones', () => {
    const settings: Settings = {
      ...DEFAULT_SETTINGS,
      path: '/x/graphmend',
      args: ['--flag'],
      traceServer: 'messages',
      configurationPreference: 'editorOnly',
      select: ['GM1'],
      ignore: ['GM105'],
      scope: 'all',
      run: 'onSave',
      fixAll: false,
      unsafeFixes: true,
      validatorPython: '/venv/bin/python',
      logLevel: 'trace',
    };
    const out = serverSettings(settings, { trusted: true });
    assert.deepEqual(out, {
      configurationPreference: 'editorOnly',
      select: ['GM1'],
      ignore: ['GM105'],
      scope: 'all',
      run: 'onSave',
      fixAll: false,
      unsafeFixes: true,
      validate: { enable: true },
      validator: { python: '/venv/bin/python' },
      logLevel: 'trace',
    });
    assert.ok(!JSON.stringify(out).includes('/x/graphmend'));
  });

  it('turns validation off in untrusted workspaces', () => {
    assert.equal(serverSettings(DEFAULT_SETTINGS, { trusted: false }).validate.enable, false);
    assert.equal(serverSettings({ ...DEFAULT_SETTINGS, validateEnable: false }, { trusted: true }).validate.enable, false);
  });

  it('is what initializationOptions sends', () => {
    assert.deepEqual(initializationOptions(DEFAULT_SETTINGS, { trusted: false }), serverSettings(DEFAULT_SETTINGS, { trusted: false }));
  });

  it('sends the chosen interpreter as validator.python, unless it is the default or the setting is set', () => {
    const venv = { python: '/ws/.venv/bin/python', source: 'workspace venv' as const };
    assert.deepEqual(serverSettings(DEFAULT_SETTINGS, { trusted: true, interpreter: venv }).validator, { python: '/ws/.venv/bin/python' });
    const picked = { python: '/envs/t/bin/python', source: 'python extension' as const };
    assert.deepEqual(serverSettings(DEFAULT_SETTINGS, { trusted: true, interpreter: picked }).validator, { python: '/envs/t/bin/python' });
    assert.deepEqual(serverSettings(DEFAULT_SETTINGS, { trusted: true, interpreter: { python: 'python3', source: 'default' } }).validator, {});
    const set = { ...DEFAULT_SETTINGS, validatorPython: '/mine/python' };
    assert.deepEqual(serverSettings(set, { trusted: true, interpreter: picked }).validator, { python: '/mine/python' });
  });

  it('does not share arrays with the settings', () => {
    const settings = { ...DEFAULT_SETTINGS, select: ['GM1'] };
    const out = serverSettings(settings, { trusted: true });
    out.select!.push('GM2');
    assert.deepEqual(settings.select, ['GM1']);
  });
});

describe('configurationItem', () => {
  const settings: Settings = { ...DEFAULT_SETTINGS, run: 'onSave', validatorPython: '/py' };
  it('answers the whole section', () => {
    assert.deepEqual(configurationItem('graphmend', settings, { trusted: true }), serverSettings(settings, { trusted: true }));
  });
  it('answers sub-sections', () => {
    assert.equal(configurationItem('graphmend.run', settings, { trusted: true }), 'onSave');
    assert.deepEqual(configurationItem('graphmend.validate', settings, { trusted: false }), { enable: false });
    assert.equal(configurationItem('graphmend.validator.python', settings, { trusted: true }), '/py');
  });
  it('answers null for what is not there', () => {
    assert.equal(configurationItem('graphmend.path', settings, { trusted: true }), null);
    assert.equal(configurationItem('graphmend.run.x', settings, { trusted: true }), null);
    assert.equal(configurationItem('python', settings, { trusted: true }), null);
    assert.equal(configurationItem('graphmendx', settings, { trusted: true }), null);
  });
});

describe('needsRestart', () => {
  it('restarts for every setting but trace.server', () => {
    for (const key of SETTING_KEYS) {
      const affected = `graphmend.${key}`;
      const expected = key !== 'trace.server';
      assert.equal(needsRestart((k) => k === affected), expected, key);
    }
  });
  it('ignores other extensions', () => {
    assert.equal(needsRestart((k) => k === 'python.defaultInterpreterPath'), false);
  });
  it('compares settings by value', () => {
    assert.ok(sameSettings({ ...DEFAULT_SETTINGS, args: ['a'] }, { ...DEFAULT_SETTINGS, args: ['a'] }));
    assert.ok(!sameSettings({ ...DEFAULT_SETTINGS, args: ['a'] }, { ...DEFAULT_SETTINGS, args: ['b'] }));
  });
});

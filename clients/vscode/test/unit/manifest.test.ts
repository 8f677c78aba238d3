// package.json must agree with the code: settings, defaults, enums, commands, trust, and pins.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { EXTENSION_ROOT, manifest } from '../paths';
import { IMPORT_STRATEGIES } from '../../src/discovery';
import {
  CONFIGURATION_PREFERENCES,
  DEFAULT_SETTINGS,
  LOG_LEVELS,
  RESTRICTED_KEYS,
  RUN_MODES,
  SCOPES,
  SETTING_KEYS,
  SettingKey,
  TRACE_LEVELS,
  readSettings,
} from '../../src/settings';

const properties = manifest.contributes.configuration.properties;

function installed(name: string): { version: string; engines?: Record<string, string> } {
  return JSON.parse(fs.readFileSync(path.join(EXTENSION_ROOT, 'node_modules', name, 'package.json'), 'utf8'));
}

describe('package.json settings', () => {
  it('declares exactly the settings the code reads', () => {
    assert.deepEqual(Object.keys(properties).sort(), SETTING_KEYS.map((k) => `graphmend.${k}`).sort());
  });

  it('has the same defaults as the code', () => {
    const { settings, warnings } = readSettings((key: SettingKey) => properties[`graphmend.${key}`].default);
    assert.deepEqual(warnings, []);
    assert.deepEqual(settings, DEFAULT_SETTINGS);
  });

  it('has the same enums as the code', () => {
    assert.deepEqual(properties['graphmend.run'].enum, RUN_MODES);
    assert.deepEqual(properties['graphmend.logLevel'].enum, LOG_LEVELS);
    assert.deepEqual(properties['graphmend.trace.server'].enum, TRACE_LEVELS);
    assert.deepEqual(properties['graphmend.scope'].enum, [...SCOPES, null]);
    assert.deepEqual(properties['graphmend.configurationPreference'].enum, CONFIGURATION_PREFERENCES);
    assert.deepEqual(properties['graphmend.importStrategy'].enum, IMPORT_STRATEGIES);
  });

  it('restricts the settings that name programs in untrusted workspaces', () => {
    const trust = manifest.capabilities.untrustedWorkspaces;
    assert.equal(trust.supported, 'limited');
    assert.deepEqual(trust.restrictedConfigurations, RESTRICTED_KEYS.map((k) => `graphmend.${k}`));
  });
});

describe('package.json commands', () => {
  it('contributes exactly the commands the extension registers', () => {
    const source = fs.readFileSync(path.join(EXTENSION_ROOT, 'src', 'extension.ts'), 'utf8');
    const registered = [...source.matchAll(/registerCommand\('([^']+)'/g)].map((m) => m[1]).sort();
    assert.deepEqual(manifest.contributes.commands.map((c) => c.command).sort(), registered);
    assert.deepEqual(registered, ['graphmend.fixAll', 'graphmend.proveDeployable', 'graphmend.restart', 'graphmend.showLogs', 'graphmend.validateTarget']);
  });

  it('activates on Python and on Jupyter notebooks', () => {
    assert.ok(manifest.activationEvents.includes('onLanguage:python'));
    assert.ok(manifest.activationEvents.includes('onNotebook:jupyter-notebook'));
    assert.equal(manifest.main, './dist/extension.js');
  });
});

describe('package.json versions', () => {
  const all = { ...manifest.dependencies, ...manifest.devDependencies };

  it('pins every dependency exactly', () => {
    for (const [name, version] of Object.entries(all)) assert.match(version, /^\d+\.\d+\.\d+$/, name);
  });

  it('pins TypeScript 5.9', () => {
    assert.match(all.typescript, /^5\.9\.\d+$/);
  });

  it('declares the VS Code that vscode-languageclient needs, and types for exactly that', () => {
    assert.equal(manifest.engines.vscode, installed('vscode-languageclient').engines?.vscode);
    assert.equal(`^${all['@types/vscode']}`, manifest.engines.vscode);
  });

  it('uses a vsce that runs on Node 20', () => {
    assert.equal(installed('@vscode/vsce').engines?.node, '>= 20');
    assert.ok(Number(process.versions.node.split('.')[0]) >= 20);
  });

  it('has the installed versions it pins, and a lock file that agrees', () => {
    for (const [name, version] of Object.entries(all)) assert.equal(installed(name).version, version, name);
    const lock = JSON.parse(fs.readFileSync(path.join(EXTENSION_ROOT, 'package-lock.json'), 'utf8'));
    assert.deepEqual(lock.packages[''].dependencies, manifest.dependencies);
    assert.deepEqual(lock.packages[''].devDependencies, manifest.devDependencies);
  });
});

// The extension's own activate(), run outside VS Code: `vscode` is the test stand-in, with the parts
// the extension reads (settings, workspace, output channel, status item, commands) made real, and the
// server is the real one. Checks start, the status item, commands, restarts and a missing server.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { EXTENSION_ROOT } from '../paths';
import { installVscodeShim, override } from '../vscodeShim';
import { serverBinary, withTimeout } from './session';

type Listener = (event: { affectsConfiguration(key: string): boolean }) => void;

describe('activate() with the real server', () => {
  const vscode = installVscodeShim() as unknown as Record<string, Record<string, unknown>>;
  const logs: string[] = [];
  const errors: string[] = [];
  const status: Record<string, unknown> = {};
  const commands = new Map<string, (...args: unknown[]) => unknown>();
  const configListeners: Listener[] = [];
  const changeSettings = (event: { affectsConfiguration(key: string): boolean }) => configListeners.forEach((l) => l(event));
  let values: Record<string, unknown> = {};
  let workspace: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let ext: any;

  const channel = {
    name: 'graphmend',
    logLevel: 2,
    info: (m: string) => logs.push(`info ${m}`),
    warn: (m: string) => logs.push(`warn ${m}`),
    error: (m: string) => logs.push(`error ${m}`),
    debug: (m: string) => logs.push(`debug ${m}`),
    trace: (m: string) => logs.push(`trace ${m}`),
    append: (m: string) => logs.push(m),
    appendLine: (m: string) => logs.push(m),
    replace: () => undefined,
    clear: () => undefined,
    show: () => logs.push('<shown>'),
    hide: () => undefined,
    dispose: () => undefined,
    onDidChangeLogLevel: () => ({ dispose: () => undefined }),
  };

  async function until(what: string, predicate: () => boolean, ms = 20000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`${what}: not reached in ${ms} ms; status ${JSON.stringify(status)}\n${logs.join('\n')}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  before(async () => {
    assert.ok(fs.existsSync(serverBinary()), `no server at ${serverBinary()}: build it (make build) or set GRAPHMEND_BIN`);
    workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'gm-act-'));
    values = { path: serverBinary() };
    override(vscode.window, 'createOutputChannel', () => channel);
    override(vscode.window, 'showErrorMessage', async (m: string) => {
      errors.push(m);
      return undefined;
    });
    override(vscode.languages, 'createLanguageStatusItem', () => status);
    override(vscode.commands, 'registerCommand', (name: string, fn: (...args: unknown[]) => unknown) => {
      commands.set(name, fn);
      return { dispose: () => commands.delete(name) };
    });
    override(vscode.workspace, 'getConfiguration', (section?: string) => ({
      get: (key: string, fallback?: unknown) => (section === 'graphmend' ? values[key] : undefined) ?? fallback,
      has: () => false,
      inspect: () => undefined,
      update: async () => undefined,
    }));
    override(vscode.workspace, 'onDidChangeConfiguration', (listener: Listener) => {
      configListeners.push(listener);
      return { dispose: () => configListeners.splice(configListeners.indexOf(listener), 1) };
    });
    override(vscode.workspace, 'isTrusted', true);
    override(vscode.workspace, 'workspaceFolders', [
      { uri: { scheme: 'file', fsPath: workspace, toString: () => `file://${workspace}` }, name: 'ws', index: 0 },
    ]);
    ext = require(path.join(EXTENSION_ROOT, 'out', 'src', 'extension.js'));
    await withTimeout(ext.activate({ subscriptions: [], extensionPath: EXTENSION_ROOT }), 30000, 'activate');
  });

  after(async () => {
    if (ext) await ext.deactivate();
    if (workspace) fs.rmSync(workspace, { recursive: true, force: true });
    // Under the stand-in, vscode-languageclient's workspace-diagnostics poll (a 2 s timer per client)
    // outlives stop(); end this test file's process once its results are out.
    setTimeout(() => process.exit(), 1000).unref();
  });

  it('starts the server found through graphmend.path and shows its version', () => {
    assert.match(String(status.text), /^\$\(check\) graphmend \d+\.\d+\.\d+/);
    assert.equal(status.detail, `running (setting: ${serverBinary()})`);
    assert.equal(status.busy, false);
    assert.ok(logs.some((l) => l === `info starting ${serverBinary()} server (found via setting)`), logs.join('\n'));
    assert.deepEqual(errors, []);
  });

  it('registers its commands', () => {
    for (const name of ['graphmend.restart', 'graphmend.fixAll', 'graphmend.validateTarget', 'graphmend.showLogs']) {
      assert.ok(commands.has(name), name);
    }
  });

  it('shows the logs', async () => {
    await commands.get('graphmend.showLogs')!();
    assert.equal(logs[logs.length - 1], '<shown>');
  });

  it('restarts on the restart command', async () => {
    const starts = logs.filter((l) => l.startsWith('info starting ')).length;
    await withTimeout(Promise.resolve(commands.get('graphmend.restart')!()), 30000, 'restart');
    assert.equal(logs.filter((l) => l.startsWith('info starting ')).length, starts + 1);
    assert.match(String(status.text), /^\$\(check\) graphmend /);
  });

  it('restarts with the new arguments when a setting changes, and not for trace.server', async () => {
    assert.ok(configListeners.length > 0, 'listens to configuration changes');
    const starts = () => logs.filter((l) => l.startsWith('info starting ')).length;
    const before = starts();
    values = { ...values, 'trace.server': 'verbose' };
    changeSettings({ affectsConfiguration: (k) => k === 'graphmend.trace.server' || k === 'graphmend' });
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(starts(), before);

    const logFile = path.join(workspace, 'server.log');
    values = { ...values, args: ['--log-file', logFile] };
    changeSettings({ affectsConfiguration: (k) => k === 'graphmend.args' || k === 'graphmend' });
    await until('restart with --log-file', () => starts() === before + 1 && String(status.text).startsWith('$(check)'));
    assert.ok(logs.some((l) => l === `info starting ${serverBinary()} server --log-file ${logFile} (found via setting)`));
    await until('the server writes its log file', () => fs.existsSync(logFile) && fs.statSync(logFile).size > 0);
  });

  it('reports a wrong graphmend.path instead of starting another server', async () => {
    values = { ...values, path: path.join(workspace, 'no-such-graphmend') };
    changeSettings({ affectsConfiguration: (k) => k === 'graphmend.path' || k === 'graphmend' });
    await until('failed status', () => String(status.text).startsWith('$(error)'));
    assert.match(String(status.detail), /no-such-graphmend.*not an executable file/);
    assert.equal(errors.length, 1);
    assert.match(errors[0], /graphmend\.path/);
  });
});

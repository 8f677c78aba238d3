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
import { fixturePath, initializeParams, readFixture, serverBinary, settingsWith, withTimeout } from './session';
import { spawnSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';

type Listener = (event: { affectsConfiguration(key: string): boolean }) => void;

// Just enough of VS Code's value types for vscode-languageclient's converters.
class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}
class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(a: Position | number, b: Position | number, c?: number, d?: number) {
    if (typeof a === 'number') {
      this.start = new Position(a, b as number);
      this.end = new Position(c!, d!);
    } else {
      this.start = a;
      this.end = b as Position;
    }
  }
}
class TextEdit {
  constructor(
    readonly range: Range,
    readonly newText: string,
  ) {}
}
class FakeUri {
  constructor(readonly value: string) {}
  get scheme() {
    return this.value.slice(0, this.value.indexOf(':'));
  }
  get fsPath() {
    return new URL(this.value).pathname;
  }
  toString() {
    return this.value;
  }
  static parse(value: string) {
    return new FakeUri(value);
  }
  static file(file: string) {
    return new FakeUri(pathToFileURL(file).href);
  }
}
class WorkspaceEdit {
  readonly entries: [FakeUri, TextEdit[]][] = [];
  set(uri: FakeUri, edits: (TextEdit | [TextEdit, unknown])[]) {
    this.entries.push([uri, edits.map((e) => (Array.isArray(e) ? e[0] : e))]);
  }
  replace(uri: FakeUri, range: Range, newText: string) {
    this.entries.push([uri, [new TextEdit(range, newText)]]);
  }
}

/** A TextDocument over a string, edited by workspace.applyEdit. */
class FakeDocument {
  version = 1;
  readonly languageId = 'python';
  readonly isUntitled = false;
  readonly isClosed = false;
  readonly uri: FakeUri;
  constructor(
    readonly fileName: string,
    public text: string,
  ) {
    this.uri = FakeUri.file(fileName);
  }
  getText() {
    return this.text;
  }
  get lineCount() {
    return this.text.split('\n').length;
  }
  lineAt(line: number) {
    const content = this.text.split('\n')[line];
    return { lineNumber: line, text: content, range: new Range(line, 0, line, content.length) };
  }
  apply(edits: TextEdit[]) {
    const starts = [0];
    for (let i = 0; i < this.text.length; i++) if (this.text[i] === '\n') starts.push(i + 1);
    const offset = (p: Position) => starts[p.line] + p.character;
    const sorted = [...edits].sort((a, b) => offset(b.range.start) - offset(a.range.start));
    for (const e of sorted) this.text = this.text.slice(0, offset(e.range.start)) + e.newText + this.text.slice(offset(e.range.end));
    this.version += 1;
  }
}

describe('activate() with the real server', () => {
  const vscode = installVscodeShim() as unknown as Record<string, Record<string, unknown>>;
  const logs: string[] = [];
  const errors: string[] = [];
  const warnings: string[] = [];
  const status: Record<string, unknown> = {};
  const commands = new Map<string, (...args: unknown[]) => unknown>();
  const configListeners: Listener[] = [];
  const changeSettings = (event: { affectsConfiguration(key: string): boolean }) => configListeners.forEach((l) => l(event));
  let values: Record<string, unknown> = {};
  let workspace: string;
  // A stand-in for the Python extension (ms-python.python) with an interpreter selected.
  let selectedPython: string;
  const pythonListeners: (() => void)[] = [];
  const pythonApi = {
    environments: {
      getActiveEnvironmentPath: () => ({ id: selectedPython, path: selectedPython }),
      onDidChangeActiveEnvironmentPath: (listener: () => void) => {
        pythonListeners.push(listener);
        return { dispose: () => pythonListeners.splice(pythonListeners.indexOf(listener), 1) };
      },
    },
  };
  let document: FakeDocument;
  let expectedFixed: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let ext: any;

  const channel = {
    name: 'graphmend',
    logLevel: 1, // vscode.LogLevel.Trace below: vscode-languageclient traces only at this level
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
    values = { path: serverBinary(), 'trace.server': 'verbose' };
    selectedPython = path.join(workspace, 'envs', 'torch', 'bin', 'python');
    fs.mkdirSync(path.dirname(selectedPython), { recursive: true });
    fs.writeFileSync(selectedPython, '#!/bin/sh\nexit 1\n', { mode: 0o755 });
    const file = path.join(workspace, 'model.py');
    fs.copyFileSync(fixturePath('model.py'), file);
    const reference = path.join(workspace, 'reference.py');
    fs.copyFileSync(fixturePath('model.py'), reference);
    spawnSync(serverBinary(), ['check', '--fix', reference], { encoding: 'utf8' });
    expectedFixed = fs.readFileSync(reference, 'utf8');
    fs.rmSync(reference);
    assert.notEqual(expectedFixed, readFixture('model.py'));
    document = new FakeDocument(file, readFixture('model.py'));
    override(vscode, 'LogLevel', { Off: 0, Trace: 1, Debug: 2, Info: 3, Warning: 4, Error: 5 });
    override(vscode, 'Position', Position);
    override(vscode, 'Range', Range);
    override(vscode, 'TextEdit', TextEdit);
    override(vscode, 'WorkspaceEdit', WorkspaceEdit);
    override(vscode, 'Uri', FakeUri);
    override(vscode.workspace, 'textDocuments', [document]);
    override(vscode.languages, 'match', (_selector: unknown, doc: { languageId?: string }) => (doc.languageId === 'python' ? 10 : 0));
    override(vscode.window, 'activeTextEditor', { document });
    override(vscode.workspace, 'applyEdit', async (edit: WorkspaceEdit) => {
      for (const [uri, edits] of edit.entries) {
        assert.equal(uri.toString(), document.uri.toString());
        document.apply(edits);
      }
      return true;
    });
    override(vscode.window, 'createOutputChannel', () => channel);
    override(vscode.window, 'showErrorMessage', async (m: string) => {
      errors.push(m);
      return undefined;
    });
    override(vscode.window, 'showWarningMessage', async (m: string) => {
      warnings.push(m);
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
    override(vscode.extensions, 'getExtension', (id: string) =>
      id === 'ms-python.python' ? { id, isActive: false, exports: undefined, activate: async () => pythonApi } : undefined,
    );
    override(vscode.workspace, 'workspaceFolders', [
      { uri: FakeUri.file(workspace), name: path.basename(workspace), index: 0 },
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

  it('sends the initialize parameters the integration tests send', () => {
    // vscode-languageclient traces every message at log level Trace with graphmend.trace.server set.
    const traced = logs.find((l) => l.startsWith("trace Sending request 'initialize"));
    assert.ok(traced, 'the initialize request in the trace');
    const sent = JSON.parse(traced.slice(traced.indexOf('Params: ') + 'Params: '.length));
    const interpreter = { python: selectedPython, source: 'python extension' as const };
    const expected = initializeParams(workspace, settingsWith({ path: serverBinary(), 'trace.server': 'verbose' }), { trusted: true, interpreter });
    assert.deepEqual(sent, JSON.parse(JSON.stringify(expected)));
    // The interpreter selected in the Python extension runs the validator.
    assert.equal(sent.initializationOptions.validator.python, selectedPython);
    assert.ok(logs.includes(`info validator interpreter: ${selectedPython} (python extension)`), logs.join('\n'));
  });

  it('restarts when the Python extension selects another interpreter', async () => {
    assert.equal(pythonListeners.length, 1, 'listens to the Python extension');
    const other = path.join(workspace, 'envs', 'other', 'bin', 'python');
    fs.mkdirSync(path.dirname(other), { recursive: true });
    fs.writeFileSync(other, '#!/bin/sh\nexit 1\n', { mode: 0o755 });
    selectedPython = other;
    const traced = () => logs.filter((l) => l.startsWith("trace Sending request 'initialize")).length;
    const before = traced();
    pythonListeners[0]();
    await until('running again', () => traced() === before + 1 && String(status.text).startsWith('$(check)'));
    const last = logs.filter((l) => l.startsWith("trace Sending request 'initialize")).pop()!;
    const sent = JSON.parse(last.slice(last.indexOf('Params: ') + 'Params: '.length));
    assert.equal(sent.initializationOptions.validator.python, other);
    assert.equal(pythonListeners.length, 1, 'one listener, also after restarts');
  });

  it('registers its commands', () => {
    for (const name of ['graphmend.restart', 'graphmend.fixAll', 'graphmend.validateTarget', 'graphmend.proveDeployable', 'graphmend.showLogs']) {
      assert.ok(commands.has(name), name);
    }
  });

  it('fixes the active file with graphmend.fixAll as `graphmend check --fix` does', async () => {
    await withTimeout(Promise.resolve(commands.get('graphmend.fixAll')!()), 30000, 'graphmend.fixAll');
    assert.equal(document.text, expectedFixed);
    assert.equal(document.version, 2);
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

  it('turns validation off in an untrusted workspace', async () => {
    override(vscode.workspace, 'isTrusted', false);
    values = { ...values, path: serverBinary() };
    const traced = () => logs.filter((l) => l.startsWith("trace Sending request 'initialize")).length;
    const before = traced();
    changeSettings({ affectsConfiguration: (k) => k === 'graphmend.path' || k === 'graphmend' });
    await until('running again', () => traced() === before + 1 && String(status.text).startsWith('$(check)'));
    const last = logs.filter((l) => l.startsWith("trace Sending request 'initialize")).pop()!;
    const sent = JSON.parse(last.slice(last.indexOf('Params: ') + 'Params: '.length));
    assert.deepEqual(sent.initializationOptions.validate, { enable: false });
    // The workspace/configuration answer says the same.
    await until('a configuration answer', () => logs.some((l) => l.startsWith("trace Sending response 'workspace/configuration") && l.includes('"enable": false')));

    await commands.get('graphmend.validateTarget')!('model.py::example');
    assert.match(warnings[warnings.length - 1], /untrusted/);
    await commands.get('graphmend.proveDeployable')!('model.py::example');
    assert.match(warnings[warnings.length - 1], /untrusted/);
    assert.ok(!logs.some((l) => l.startsWith('info $ ')), 'no graphmend validate was run');
  });
});

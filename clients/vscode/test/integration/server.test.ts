// The extension's side of the protocol against the real server: started as the extension starts it,
// with the initialize parameters and settings the extension sends, asked what VS Code asks.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { before, describe, it } from 'node:test';

import type { CodeAction, Command, Diagnostic, DocumentDiagnosticReport } from 'vscode-languageserver-protocol';

import { FIX_ALL_KIND, parseTarget, suggestTarget, validateArgs } from '../../src/server';
import { Settings } from '../../src/settings';
import { Session, applyTextEdits, editsFor, fixturePath, readFixture, serverBinary, settingsWith, startSession, withTimeout } from './session';

const FIXTURE = 'model.py';
const CodeActionTriggerKind = { Invoked: 1, Automatic: 2 };

interface CliFinding {
  code: string | null;
  location: { row: number; column: number };
  fix: unknown;
}

/** `graphmend check` on a copy of `text`: the fixed text and the JSON findings. */
function cli(text: string, args: string[]): { text: string; stdout: string; status: number | null } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gm-cli-'));
  try {
    const file = path.join(dir, FIXTURE);
    fs.writeFileSync(file, text);
    const r = spawnSync(serverBinary(), ['check', ...args, file], { cwd: dir, encoding: 'utf8', timeout: 60000 });
    if (r.error) throw r.error;
    assert.ok(r.status === 0 || r.status === 1, `graphmend check ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
    return { text: fs.readFileSync(file, 'utf8'), stdout: r.stdout, status: r.status };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

class Editor {
  version = 1;
  constructor(
    readonly session: Session,
    readonly uri: string,
    public text: string,
  ) {}

  async open(): Promise<void> {
    await this.session.connection.sendNotification('textDocument/didOpen', {
      textDocument: { uri: this.uri, languageId: 'python', version: this.version, text: this.text },
    });
  }

  async replace(text: string): Promise<void> {
    this.version += 1;
    this.text = text;
    await this.session.connection.sendNotification('textDocument/didChange', {
      textDocument: { uri: this.uri, version: this.version },
      contentChanges: [{ text }],
    });
  }

  /** Diagnostics the way VS Code gets them with these capabilities: pulled when the server offers it. */
  async diagnostics(): Promise<Diagnostic[]> {
    const caps = this.session.result.capabilities;
    if (caps.diagnosticProvider) {
      const deadline = Date.now() + 20000;
      for (;;) {
        const report = await withTimeout(
          this.session.connection.sendRequest<DocumentDiagnosticReport>('textDocument/diagnostic', { textDocument: { uri: this.uri } }),
          20000,
          'textDocument/diagnostic',
          this.session.stderr,
        ).catch((e: { code?: number }) => {
          if (e.code === -32801 /* ContentModified */ || e.code === -32802 /* ServerCancelled */) return undefined;
          throw e;
        });
        if (report !== undefined) {
          assert.equal(report.kind, 'full');
          return report.kind === 'full' ? report.items : [];
        }
        if (Date.now() > deadline) throw new Error('textDocument/diagnostic kept failing');
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const deadline = Date.now() + 20000;
    for (;;) {
      const mine = this.session.pushed.filter((p) => p.uri === this.uri && (p.version === undefined || p.version === this.version));
      if (mine.length > 0) return mine[mine.length - 1].diagnostics;
      if (Date.now() > deadline) throw new Error(`no publishDiagnostics for version ${this.version}\n${this.session.stderr.join('')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  fullRange() {
    const lines = this.text.split('\n');
    return { start: { line: 0, character: 0 }, end: { line: lines.length - 1, character: lines[lines.length - 1].length } };
  }

  async codeActions(range: Diagnostic['range'], diagnostics: Diagnostic[], only?: string[], trigger = CodeActionTriggerKind.Invoked) {
    const context: Record<string, unknown> = { diagnostics, triggerKind: trigger };
    if (only) context.only = only;
    const actions = await withTimeout(
      this.session.connection.sendRequest<(CodeAction | Command)[] | null>('textDocument/codeAction', { textDocument: { uri: this.uri }, range, context }),
      20000,
      'textDocument/codeAction',
      this.session.stderr,
    );
    return (actions ?? []).filter((a): a is CodeAction => typeof (a as Command).command !== 'string');
  }

  /** What VS Code does with a chosen action: resolve when it has no edit, apply the edit, run the command. */
  async apply(action: CodeAction): Promise<string> {
    let a = action;
    const provider = this.session.result.capabilities.codeActionProvider;
    if (a.edit === undefined && typeof provider === 'object' && provider.resolveProvider) {
      a = await withTimeout(this.session.connection.sendRequest<CodeAction>('codeAction/resolve', a), 20000, 'codeAction/resolve');
    }
    let text = this.text;
    if (a.edit) text = applyTextEdits(text, editsFor(a.edit, this.uri));
    if (a.command) {
      const before = this.session.applied.length;
      await this.session.connection.sendRequest('workspace/executeCommand', { command: a.command.command, arguments: a.command.arguments });
      for (const edit of this.session.applied.slice(before)) text = applyTextEdits(text, editsFor(edit, this.uri));
    }
    return text;
  }
}

async function withEditor(settings: Settings, text: string, body: (editor: Editor) => Promise<void>): Promise<void> {
  const workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'gm-ws-'));
  const file = path.join(workspace, FIXTURE);
  fs.writeFileSync(file, text);
  const session = await startSession(workspace, settings);
  try {
    const editor = new Editor(session, pathToFileURL(file).href, text);
    await editor.open();
    await body(editor);
  } finally {
    const code = await session.close();
    fs.rmSync(workspace, { recursive: true, force: true });
    assert.equal(code, 0, `server exit code after shutdown/exit\n${session.stderr.join('')}`);
  }
}

const source = readFixture(FIXTURE);

describe(`graphmend server (${serverBinary()}) as the VS Code extension drives it`, () => {
  let expectedFixed: string;
  let expectedFindings: { code: string; row: number; fixable: boolean }[];

  before(() => {
    assert.ok(fs.existsSync(serverBinary()), `no server at ${serverBinary()}: build it (make build) or set GRAPHMEND_BIN`);
    expectedFixed = cli(source, ['--fix']).text;
    const json = JSON.parse(cli(source, ['--output-format', 'json']).stdout) as CliFinding[];
    expectedFindings = json
      .filter((f) => f.code !== null)
      .map((f) => ({ code: f.code!, row: f.location.row, fixable: f.fix !== null && f.fix !== undefined }));
    assert.ok(expectedFindings.length >= 2, `the fixture should have graph breaks: ${JSON.stringify(json)}`);
    assert.notEqual(expectedFixed, source, 'graphmend check --fix should change the fixture');
  });

  it('initializes with the extension parameters and advertises what the extension uses', async () => {
    await withEditor(settingsWith(), source, async (editor) => {
      const { result, initialize } = editor.session;
      assert.equal(result.serverInfo?.name, 'graphmend');
      assert.match(result.serverInfo?.version ?? '', /^\d+\.\d+\.\d+/);
      // VS Code offers only UTF-16.
      assert.deepEqual(initialize.capabilities.general?.positionEncodings, ['utf-16']);
      assert.ok(result.capabilities.positionEncoding === undefined || result.capabilities.positionEncoding === 'utf-16');
      const cap = result.capabilities.codeActionProvider;
      assert.ok(typeof cap === 'object' && cap.codeActionKinds, 'codeActionProvider with kinds');
      assert.ok(cap.codeActionKinds!.includes(FIX_ALL_KIND), `kinds: ${cap.codeActionKinds}`);
      assert.ok(cap.codeActionKinds!.includes('quickfix'));
      assert.ok(result.capabilities.hoverProvider);
      assert.deepEqual(initialize.initializationOptions, {
        run: 'onType',
        fixAll: true,
        unsafeFixes: false,
        validate: { enable: true },
        validator: {},
        logLevel: 'info',
      });
    });
  });

  it('reports the breaks `graphmend check` reports, at the same lines', async () => {
    await withEditor(settingsWith(), source, async (editor) => {
      const diagnostics = await editor.diagnostics();
      const got = diagnostics.map((d) => `${d.code}@${d.range.start.line + 1}`).sort();
      const want = expectedFindings.map((f) => `${f.code}@${f.row}`).sort();
      assert.deepEqual(got, want);
      for (const d of diagnostics) {
        assert.equal(d.source, 'graphmend');
        assert.match(String(d.code), /^GM\d{3}$/);
        assert.match(d.codeDescription?.href ?? '', /^(https?|file):\/\//, 'a link to the rule page');
        assert.ok((typeof d.message === 'string' ? d.message : d.message.value).length > 0);
      }
    });
  });

  it('offers a quick fix for each fixable break, and a noqa suppression', async () => {
    await withEditor(settingsWith(), source, async (editor) => {
      const diagnostics = await editor.diagnostics();
      const fixable = new Set(expectedFindings.filter((f) => f.fixable).map((f) => `${f.code}@${f.row}`));
      assert.ok(fixable.size > 0, 'the fixture has fixable breaks');
      for (const d of diagnostics) {
        const actions = await editor.codeActions(d.range, [d]);
        const quickfixes = actions.filter((a) => a.kind === 'quickfix' || a.kind?.startsWith('quickfix.'));
        const key = `${d.code}@${d.range.start.line + 1}`;
        const suppress = quickfixes.filter((a) => /noqa/i.test(a.title));
        assert.ok(suppress.length >= 1, `${key}: a noqa action among ${actions.map((a) => a.title)}`);
        const suppressed = await editor.apply(suppress[0]);
        assert.match(suppressed.split('\n')[d.range.start.line], new RegExp(`noqa: ${d.code}`), `${key}: noqa edit`);
        const fixes = quickfixes.filter((a) => !/noqa/i.test(a.title));
        if (fixable.has(key)) {
          assert.ok(fixes.length >= 1, `${key}: a quick fix among ${actions.map((a) => a.title)}`);
          const fixed = await editor.apply(fixes[0]);
          assert.notEqual(fixed, editor.text, `${key}: the quick fix changes the text`);
        }
      }
    });
  });

  it('source.fixAll.graphmend (codeActionsOnSave) gives the same text as `graphmend check --fix`', async () => {
    await withEditor(settingsWith(), source, async (editor) => {
      await editor.diagnostics();
      // What VS Code sends for "editor.codeActionsOnSave": {"source.fixAll.graphmend": "explicit"}.
      const actions = await editor.codeActions(editor.fullRange(), [], [FIX_ALL_KIND], CodeActionTriggerKind.Automatic);
      assert.equal(actions.length, 1, `exactly one fix-all action: ${JSON.stringify(actions)}`);
      assert.equal(actions[0].kind, FIX_ALL_KIND);
      const fixed = await editor.apply(actions[0]);
      assert.equal(fixed, expectedFixed);

      // After the edit, the fixed breaks are gone.
      await editor.replace(fixed);
      const after = await editor.diagnostics();
      const remaining = expectedFindings.length - after.length;
      assert.ok(remaining > 0, `fewer diagnostics after fix-all: ${after.map((d) => d.code)}`);
      // And fix-all is idempotent.
      const again = await editor.codeActions(editor.fullRange(), [], [FIX_ALL_KIND], CodeActionTriggerKind.Automatic);
      const text = again.length === 0 ? fixed : await editor.apply(again[0]);
      assert.equal(text, fixed);
    });
  });

  it('answers a request for plain source.fixAll with its fix-all action (kind prefix)', async () => {
    await withEditor(settingsWith(), source, async (editor) => {
      await editor.diagnostics();
      const actions = await editor.codeActions(editor.fullRange(), [], ['source.fixAll'], CodeActionTriggerKind.Automatic);
      assert.deepEqual(actions.map((a) => a.kind), [FIX_ALL_KIND]);
      assert.equal(await editor.apply(actions[0]), expectedFixed);
    });
  });

  it('graphmend.applyAutofix (the command VS Code gets from the server) applies fix-all through workspace/applyEdit', async () => {
    await withEditor(settingsWith(), source, async (editor) => {
      await editor.diagnostics();
      const commands = editor.session.result.capabilities.executeCommandProvider?.commands ?? [];
      assert.ok(commands.includes('graphmend.applyAutofix'), `commands: ${commands}`);
      await withTimeout(
        editor.session.connection.sendRequest('workspace/executeCommand', {
          command: 'graphmend.applyAutofix',
          arguments: [{ uri: editor.uri, version: editor.version }],
        }),
        20000,
        'graphmend.applyAutofix',
      );
      assert.equal(editor.session.applied.length, 1);
      assert.equal(applyTextEdits(editor.text, editsFor(editor.session.applied[0], editor.uri)), expectedFixed);
    });
  });

  it('offers no fix-all when graphmend.fixAll is false', async () => {
    await withEditor(settingsWith({ fixAll: false }), source, async (editor) => {
      await editor.diagnostics();
      const actions = await editor.codeActions(editor.fullRange(), [], [FIX_ALL_KIND], CodeActionTriggerKind.Automatic);
      assert.deepEqual(actions, []);
    });
  });

  it('applies graphmend.select and graphmend.ignore', async () => {
    const codes = [...new Set(expectedFindings.map((f) => f.code))].sort();
    assert.ok(codes.length >= 2, `the fixture has breaks of two rules at least: ${codes}`);
    await withEditor(settingsWith({ select: [codes[0]] }), source, async (editor) => {
      const got = new Set((await editor.diagnostics()).map((d) => String(d.code)));
      assert.deepEqual([...got], [codes[0]]);
    });
    await withEditor(settingsWith({ ignore: [codes[0]] }), source, async (editor) => {
      const got = new Set((await editor.diagnostics()).map((d) => String(d.code)));
      assert.ok(!got.has(codes[0]) && got.size > 0, `ignored ${codes[0]}: ${[...got]}`);
    });
  });

  it('registers a pyproject.toml watcher and re-analyses when [tool.graphmend] changes', async () => {
    const codes = [...new Set(expectedFindings.map((f) => f.code))].sort();
    await withEditor(settingsWith(), source, async (editor) => {
      assert.deepEqual((await editor.diagnostics()).map((d) => String(d.code)).sort(), expectedFindings.map((f) => f.code).sort());
      const watch = editor.session.registrations.find((r) => r.method === 'workspace/didChangeWatchedFiles');
      assert.ok(watch, `a file watcher registration: ${JSON.stringify(editor.session.registrations)}`);
      assert.match(JSON.stringify(watch.registerOptions), /pyproject\.toml/);

      const pyproject = path.join(path.dirname(fileURLToPath(editor.uri)), 'pyproject.toml');
      fs.writeFileSync(pyproject, `[tool.graphmend]\nignore = ["${codes[0]}"]\n`);
      await editor.session.connection.sendNotification('workspace/didChangeWatchedFiles', {
        changes: [{ uri: pathToFileURL(pyproject).href, type: 1 /* Created */ }],
      });
      const deadline = Date.now() + 20000;
      for (;;) {
        const got = (await editor.diagnostics()).map((d) => String(d.code));
        if (!got.includes(codes[0])) {
          assert.ok(got.length > 0, 'the other rules still report');
          break;
        }
        if (Date.now() > deadline) throw new Error(`${codes[0]} still reported after the pyproject.toml change: ${got}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    });
  });

  it('hovers a break with its explanation', async () => {
    await withEditor(settingsWith(), source, async (editor) => {
      const [first] = await editor.diagnostics();
      const hover = await editor.session.connection.sendRequest<{ contents: unknown } | null>('textDocument/hover', {
        textDocument: { uri: editor.uri },
        position: first.range.start,
      });
      assert.ok(hover !== null, 'a hover on a break');
      assert.match(JSON.stringify(hover.contents), new RegExp(String(first.code)));
    });
  });

  it('syncs a notebook whole: a break in one cell compiled in another, on the cell and in its positions', async () => {
    const workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'gm-ws-'));
    const notebook = path.join(workspace, 'nb.ipynb');
    const session = await startSession(workspace, settingsWith());
    try {
      // The Python cells of Jupyter notebooks: what DOCUMENT_SELECTOR's notebook entries match.
      assert.deepEqual(session.result.capabilities.notebookDocumentSync?.notebookSelector, [
        { notebook: { notebookType: 'jupyter-notebook' }, cells: [{ language: 'python' }] },
      ]);
      const cell = (n: number) => `vscode-notebook-cell:${notebook}#W${n}sZmlsZQ%3D%3D`;
      const model = 'import torch\n\ndef step(x):\n    if x.sum() > 0:\n        x = x + x\n    return x + 0\n';
      const compile = 'fast = torch.compile(step)\n';
      // What vscode-languageclient sends for an opened notebook (its capabilities declare notebook sync).
      assert.ok(session.initialize.capabilities.notebookDocument?.synchronization);
      await session.connection.sendNotification('notebookDocument/didOpen', {
        notebookDocument: {
          uri: pathToFileURL(notebook).href,
          notebookType: 'jupyter-notebook',
          version: 1,
          cells: [
            { kind: 2, document: cell(0) },
            { kind: 2, document: cell(1) },
          ],
        },
        cellTextDocuments: [
          { uri: cell(0), languageId: 'python', version: 1, text: model },
          { uri: cell(1), languageId: 'python', version: 1, text: compile },
        ],
      });
      const modelCell = new Editor(session, cell(0), model);
      const diagnostics = await modelCell.diagnostics();
      assert.deepEqual(
        diagnostics.map((d) => `${d.code}@${d.range.start.line}:${d.range.start.character}`),
        ['GM101@3:7'],
      );
      const actions = await modelCell.codeActions(diagnostics[0].range, diagnostics);
      const fix = actions.find((a) => a.kind === 'quickfix' && a.isPreferred);
      assert.ok(fix, `a quick fix among ${actions.map((a) => a.title)}`);
      assert.equal(await modelCell.apply(fix), model.replace('    if x.sum() > 0:\n        x = x + x\n', '    x = torch.where(x.sum() > 0, x + x, x)\n'));
      assert.deepEqual(await new Editor(session, cell(1), compile).diagnostics(), []);
    } finally {
      const code = await session.close();
      fs.rmSync(workspace, { recursive: true, force: true });
      assert.equal(code, 0, `server exit code after shutdown/exit\n${session.stderr.join('')}`);
    }
  });

  it('gets the extension settings from workspace/configuration when it asks', async () => {
    const settings = settingsWith({ run: 'onSave', select: ['GM'], 'validator.python': '/usr/bin/python3' });
    await withEditor(settings, source, async (editor) => {
      await editor.diagnostics().catch(() => []);
      const ours = editor.session.configurationRequests.filter((r) => r.section === 'graphmend');
      assert.ok(ours.length >= 1, `the server asks for section "graphmend": ${JSON.stringify(editor.session.configurationRequests)}`);
      for (const request of editor.session.configurationRequests) {
        if (request.section === 'graphmend') {
          assert.deepEqual(request.answer, {
            select: ['GM'],
            run: 'onSave',
            fixAll: true,
            unsafeFixes: false,
            validate: { enable: true },
            validator: { python: '/usr/bin/python3' },
            logLevel: 'info',
          });
        }
      }
    });
  });

  it('builds a `graphmend validate` command line the CLI accepts (Validate Target without server support)', () => {
    const target = suggestTarget(fixturePath(FIXTURE), source);
    assert.ok(!('error' in parseTarget(target)), target);
    // A Python that does not exist: the CLI gets past its argument parsing and stops at the interpreter.
    const args = validateArgs(target, settingsWith({ 'validator.python': '/nonexistent/python' }));
    const r = spawnSync(serverBinary(), args, { encoding: 'utf8', timeout: 60000 });
    assert.equal(r.status, 3, r.stderr);
    assert.match(r.stderr, /cannot run python '\/nonexistent\/python'/);
  });

  it('adds --deploy for Prove Target Deployable, and the CLI accepts it', () => {
    const target = suggestTarget(fixturePath(FIXTURE), source);
    const args = validateArgs(target, settingsWith({ 'validator.python': '/nonexistent/python' }), true);
    assert.deepEqual(args.slice(0, 3), ['validate', target, '--deploy']);
    const r = spawnSync(serverBinary(), args, { encoding: 'utf8', timeout: 60000 });
    assert.equal(r.status, 3, r.stderr);
    assert.match(r.stderr, /cannot run python '\/nonexistent\/python'/);
  });
});

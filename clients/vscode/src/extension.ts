// The VS Code glue: settings, the language client's lifecycle, commands, the output channel and the
// language status item. Logic that does not need `vscode` lives in settings.ts, discovery.ts,
// server.ts and client.ts, where the unit tests reach it.
import { spawn } from 'child_process';
import * as path from 'path';
import * as vscode from 'vscode';
import {
  CodeAction,
  CodeActionRequest,
  CodeActionResolveRequest,
  CodeActionTriggerKind,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
  TransportKind,
} from 'vscode-languageclient/node';

import { CLIENT_ID, CLIENT_NAME, DOCUMENT_SELECTOR, OUTPUT_CHANNEL, serverProcess } from './client';
import { DiscoveryInput, Found, NotFound, findServer } from './discovery';
import { Interpreter, PYTHON_EXTENSION_ID, PythonExtensionApi, chooseInterpreter, validatorPython } from './interpreter';
import { FIX_ALL_KIND, VALIDATE_COMMAND, ServerState, parseTarget, pickFixAll, statusText, suggestTarget, validateArgs } from './server';
import {
  CONFIG_SECTION,
  Settings,
  SettingKey,
  configurationItem,
  needsRestart,
  readSettings,
  sameSettings,
  serverSettings,
} from './settings';

let client: LanguageClient | undefined;
let settings: Settings | undefined;
let interpreter: Interpreter | undefined;
let pythonListener: vscode.Disposable | undefined;
let output: vscode.LogOutputChannel;
let status: vscode.LanguageStatusItem;
let serverVersion: string | undefined;
let pending: Promise<void> = Promise.resolve();

function currentSettings(): Settings {
  const config = vscode.workspace.getConfiguration(CONFIG_SECTION);
  const { settings: read, warnings } = readSettings((key: SettingKey) => config.get(key));
  for (const warning of warnings) output.warn(warning);
  return read;
}

function workspaceFolderPaths(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
}

/** The Python extension's API, when it is installed; activates it (its exports need that). */
async function pythonExtensionApi(): Promise<PythonExtensionApi | undefined> {
  const ext = vscode.extensions.getExtension<PythonExtensionApi>(PYTHON_EXTENSION_ID);
  if (ext === undefined || ext === null) return undefined;
  try {
    const api = ext.isActive === true ? ext.exports : await ext.activate();
    return typeof api === 'object' && api !== null ? api : undefined;
  } catch (error) {
    output.warn(`the Python extension did not activate: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }
}

/**
 * A restart when the interpreter selected in the Python extension changes (only while it is the one in
 * use: graphmend.validator.python unset).
 */
function watchPythonExtension(context: vscode.ExtensionContext, api: PythonExtensionApi | undefined): void {
  if (pythonListener !== undefined || api === undefined) return;
  const event = (api.environments as { onDidChangeActiveEnvironmentPath?: unknown } | undefined)?.onDidChangeActiveEnvironmentPath;
  if (typeof event !== 'function') return;
  try {
    const disposable = (event as (listener: () => void) => vscode.Disposable)(() => {
      if ((settings ?? currentSettings()).validatorPython !== null) return;
      output.info('the Python extension selected another interpreter; restarting the server');
      void restart(context);
    });
    if (disposable && typeof disposable.dispose === 'function') {
      pythonListener = disposable;
      context.subscriptions.push(disposable);
    }
  } catch {
    // Without the event, a restart (graphmend: Restart Server) picks the new interpreter up.
  }
}

/** The interpreter for validation and importStrategy "fromEnvironment" (see interpreter.ts). */
async function currentInterpreter(context: vscode.ExtensionContext, s: Settings): Promise<Interpreter> {
  const folders = workspaceFolderPaths();
  // The setting wins: the Python extension is not even activated then.
  const api = s.validatorPython === null ? await pythonExtensionApi() : undefined;
  watchPythonExtension(context, api);
  const resource = (vscode.workspace.workspaceFolders ?? []).find((f) => f.uri.scheme === 'file')?.uri;
  return chooseInterpreter({
    configured: s.validatorPython,
    pythonApi: api,
    resource,
    workspaceFolders: folders,
    platform: process.platform,
  });
}

function discover(context: vscode.ExtensionContext, s: Settings, chosen: Interpreter): Found | NotFound {
  const input: DiscoveryInput = {
    configuredPath: s.path,
    extensionPath: context.extensionPath,
    workspaceFolders: workspaceFolderPaths(),
    env: process.env,
    platform: process.platform,
    importStrategy: s.importStrategy,
    interpreter: chosen,
    trusted: vscode.workspace.isTrusted === true,
  };
  return findServer(input);
}

function setStatus(state: ServerState, detail?: string): void {
  const s = statusText(state, serverVersion, detail);
  status.text = s.text;
  status.detail = s.detail;
  status.busy = state === 'starting';
  status.severity =
    s.severity === 'error'
      ? vscode.LanguageStatusSeverity.Error
      : s.severity === 'warning'
        ? vscode.LanguageStatusSeverity.Warning
        : vscode.LanguageStatusSeverity.Information;
}

async function startClient(context: vscode.ExtensionContext): Promise<void> {
  settings = currentSettings();
  const folders = workspaceFolderPaths();
  const chosen = await currentInterpreter(context, settings);
  interpreter = chosen;
  output.info(`validator interpreter: ${chosen.source === 'default' ? `${chosen.python} (the server's default)` : `${chosen.python} (${chosen.source})`}`);
  const found = discover(context, settings, chosen);
  if (!found.ok) {
    output.error(found.message);
    if (found.tried.length > 0) output.info(`looked for the server at:\n  ${found.tried.join('\n  ')}`);
    setStatus('failed', found.message);
    const choice = await vscode.window.showErrorMessage(found.message, 'Open Settings', 'Show Logs');
    if (choice === 'Open Settings') {
      await vscode.commands.executeCommand('workbench.action.openSettings', 'graphmend.path');
    } else if (choice === 'Show Logs') {
      output.show();
    }
    return;
  }

  const proc = serverProcess(found, settings, folders);
  output.info(`starting ${proc.command} ${proc.args.join(' ')} (found via ${found.source})`);
  const executable = { command: proc.command, args: proc.args, transport: TransportKind.stdio, options: { cwd: proc.cwd } };
  const serverOptions: ServerOptions = { run: executable, debug: executable };
  const env = () => ({ trusted: vscode.workspace.isTrusted, interpreter: chosen });
  const clientOptions: LanguageClientOptions = {
    documentSelector: DOCUMENT_SELECTOR,
    outputChannel: output,
    initializationOptions: () => serverSettings(settings ?? currentSettings(), env()),
    middleware: {
      workspace: {
        // Answer for our section from the same module that built initializationOptions, so the server
        // sees one shape (and validation stays off in untrusted workspaces).
        configuration: async (params, token, next) => {
          const answers = await next(params, token);
          if (!Array.isArray(answers)) return answers;
          return params.items.map((item, i) =>
            item.section === CONFIG_SECTION || item.section?.startsWith(CONFIG_SECTION + '.')
              ? configurationItem(item.section, settings ?? currentSettings(), env())
              : answers[i],
          );
        },
      },
    },
  };

  const c = new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
  client = c;
  serverVersion = undefined;
  c.onDidChangeState((e) => {
    if (c !== client) return;
    if (e.newState === State.Starting) setStatus('starting');
    else if (e.newState === State.Running) {
      serverVersion = c.initializeResult?.serverInfo?.version;
      setStatus('running', `running (${found.source}: ${proc.command})`);
    } else setStatus('stopped');
  });
  setStatus('starting');
  try {
    await c.start();
    serverVersion = c.initializeResult?.serverInfo?.version;
    setStatus('running', `running (${found.source}: ${proc.command})`);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    output.error(`the server failed to start: ${message}`);
    setStatus('failed', message);
  }
}

async function stopClient(): Promise<void> {
  const c = client;
  client = undefined;
  if (c === undefined) return;
  try {
    await c.stop(5000);
  } catch (error) {
    output.warn(`stopping the server: ${error instanceof Error ? error.message : String(error)}`);
  }
  c.dispose();
}

/** Serializes restarts so that quick setting edits do not race each other. */
function restart(context: vscode.ExtensionContext): Promise<void> {
  pending = pending.then(async () => {
    await stopClient();
    await startClient(context);
  });
  return pending;
}

async function fixAll(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  const c = client;
  if (editor === undefined || editor.document.languageId !== 'python') {
    void vscode.window.showInformationMessage('graphmend: open a Python file to fix.');
    return;
  }
  if (c === undefined || !c.isRunning()) {
    void vscode.window.showErrorMessage('graphmend: the server is not running.');
    return;
  }
  const document = editor.document;
  const version = document.version;
  const lastLine = document.lineAt(document.lineCount - 1);
  const params = {
    textDocument: { uri: c.code2ProtocolConverter.asUri(document.uri) },
    range: c.code2ProtocolConverter.asRange(new vscode.Range(0, 0, lastLine.lineNumber, lastLine.range.end.character)),
    context: { diagnostics: [], only: [FIX_ALL_KIND], triggerKind: CodeActionTriggerKind.Invoked },
  };
  const actions = await c.sendRequest(CodeActionRequest.type, params);
  let action = pickFixAll<CodeAction>(actions ?? []);
  if (action === undefined) {
    void vscode.window.showInformationMessage('graphmend: nothing to fix.');
    return;
  }
  const provider = c.initializeResult?.capabilities.codeActionProvider;
  const canResolve = typeof provider === 'object' && provider.resolveProvider === true;
  if (action.edit === undefined && action.command === undefined && canResolve) {
    action = await c.sendRequest(CodeActionResolveRequest.type, action);
  }
  if (document.version !== version) {
    void vscode.window.showWarningMessage('graphmend: the file changed while fixing; run Fix All again.');
    return;
  }
  if (action.edit !== undefined) {
    const edit = await c.protocol2CodeConverter.asWorkspaceEdit(action.edit);
    if (!(await vscode.workspace.applyEdit(edit))) {
      void vscode.window.showErrorMessage('graphmend: VS Code refused the fix-all edit.');
      return;
    }
  }
  if (action.command !== undefined) {
    await c.sendRequest(ExecuteCommandRequest.type, { command: action.command.command, arguments: action.command.arguments });
  }
}

function runCli(command: string, args: string[], cwd: string | undefined, token: vscode.CancellationToken): Promise<number> {
  return new Promise((resolve, reject) => {
    output.info(`$ ${command} ${args.join(' ')}`);
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    const cancel = token.onCancellationRequested(() => child.kill());
    child.stdout.on('data', (chunk: Buffer) => output.append(chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => output.append(chunk.toString()));
    child.on('error', (error) => {
      cancel.dispose();
      reject(error);
    });
    child.on('close', (code) => {
      cancel.dispose();
      resolve(code ?? -1);
    });
  });
}

async function validateTarget(context: vscode.ExtensionContext, target?: unknown, deploy = false): Promise<void> {
  if (!vscode.workspace.isTrusted) {
    void vscode.window.showWarningMessage('graphmend: validation runs the model code and is disabled in untrusted workspaces.');
    return;
  }
  const s = settings ?? currentSettings();
  if (!s.validateEnable) {
    void vscode.window.showInformationMessage('graphmend: validation is turned off (graphmend.validate.enable).');
    return;
  }
  let value = typeof target === 'string' ? target : undefined;
  if (value === undefined) {
    const doc = vscode.window.activeTextEditor?.document;
    const suggestion = doc?.languageId === 'python' ? suggestTarget(vscode.workspace.asRelativePath(doc.uri, false), doc.getText()) : '';
    value = await vscode.window.showInputBox({
      title: 'graphmend: validate target',
      prompt: 'file.py::factory (a callable returning the model and its example inputs)',
      value: suggestion,
      validateInput: (v) => {
        const parsed = parseTarget(v);
        return 'error' in parsed ? parsed.error : undefined;
      },
    });
    if (value === undefined) return;
  }
  const parsed = parseTarget(value);
  if ('error' in parsed) {
    void vscode.window.showErrorMessage(`graphmend: ${parsed.error}`);
    return;
  }
  output.show(true);
  const c = client;
  const commands = c?.initializeResult?.capabilities.executeCommandProvider?.commands ?? [];
  await vscode.window.withProgress(
    {
      location: vscode.ProgressLocation.Notification,
      title: deploy ? `graphmend: proving ${value} deployable` : `graphmend: validating ${value}`,
      cancellable: true,
    },
    async (_progress, token) => {
      if (c !== undefined && c.isRunning() && commands.includes(VALIDATE_COMMAND)) {
        const result = await c.sendRequest(ExecuteCommandRequest.type, { command: VALIDATE_COMMAND, arguments: [deploy ? { target: value, deploy: true } : { target: value }] }, token);
        output.info(`validation of ${value}:\n${JSON.stringify(result, null, 2)}`);
        return;
      }
      const chosen = interpreter ?? (await currentInterpreter(context, s));
      const found = discover(context, s, chosen);
      if (!found.ok) {
        void vscode.window.showErrorMessage(found.message);
        return;
      }
      const cwd = workspaceFolderPaths()[0] ?? (path.isAbsolute(parsed.file) ? path.dirname(parsed.file) : undefined);
      const code = await runCli(found.command, validateArgs(value!, s, deploy, validatorPython(chosen)), cwd, token);
      if (code !== 0 && !token.isCancellationRequested) {
        void vscode.window.showWarningMessage(`graphmend validate exited with ${code}; see the output.`, 'Show Logs').then((c2) => {
          if (c2 === 'Show Logs') output.show();
        });
      }
    },
  );
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel(OUTPUT_CHANNEL, { log: true });
  status = vscode.languages.createLanguageStatusItem('graphmend.status', DOCUMENT_SELECTOR);
  status.name = 'graphmend';
  status.command = { title: 'Show Logs', command: 'graphmend.showLogs' };
  context.subscriptions.push(output, status);

  context.subscriptions.push(
    vscode.commands.registerCommand('graphmend.restart', () => restart(context)),
    vscode.commands.registerCommand('graphmend.fixAll', fixAll),
    vscode.commands.registerCommand('graphmend.validateTarget', (target?: unknown) => validateTarget(context, target)),
    vscode.commands.registerCommand('graphmend.proveDeployable', (target?: unknown) => validateTarget(context, target, true)),
    vscode.commands.registerCommand('graphmend.showLogs', () => output.show()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (!needsRestart((key) => event.affectsConfiguration(key))) return;
      const next = currentSettings();
      if (settings !== undefined && sameSettings(settings, next) && client !== undefined) return;
      output.info('graphmend settings changed; restarting the server');
      void restart(context);
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      output.info('workspace trusted; restarting the server with validation allowed');
      void restart(context);
    }),
  );

  pending = startClient(context);
  await pending;
}

export async function deactivate(): Promise<void> {
  await stopClient();
}

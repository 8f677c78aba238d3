// Starts the real `graphmend server` the way the extension does (same discovery, same command line,
// same initialize parameters, same answers to workspace/configuration) and talks to it over stdio
// with vscode-jsonrpc, playing the part of VS Code.
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';

import { MessageConnection, StreamMessageReader, StreamMessageWriter, createMessageConnection } from 'vscode-jsonrpc/node';
import type {
  ClientCapabilities,
  InitializeParams,
  InitializeResult,
  PublishDiagnosticsParams,
  TextEdit,
  WorkspaceEdit,
} from 'vscode-languageserver-protocol';

import { serverProcess } from '../../src/client';
import { findServer } from '../../src/discovery';
import { Environment, SettingKey, Settings, configurationItem, initializationOptions, readSettings } from '../../src/settings';
import { EXTENSION_ROOT, manifest } from '../paths';
import { VSCODE_VERSION, installVscodeShim } from '../vscodeShim';

/** The server under test: $GRAPHMEND_BIN, else the project's build. */
export function serverBinary(): string {
  return path.resolve(EXTENSION_ROOT, process.env.GRAPHMEND_BIN ?? '../../build/graphmend');
}

/** Settings as VS Code would read them: package.json defaults, overridden by `user`. */
export function settingsWith(user: Partial<Record<SettingKey, unknown>> = {}): Settings {
  const props = manifest.contributes.configuration.properties;
  const { settings, warnings } = readSettings((key) => (key in user ? user[key] : props[`graphmend.${key}`].default));
  if (warnings.length > 0) throw new Error(warnings.join('\n'));
  return settings;
}

/** The ClientCapabilities vscode-languageclient (the version the extension bundles) sends. */
export function vscodeClientCapabilities(): ClientCapabilities {
  installVscodeShim();
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { LanguageClient } = require('vscode-languageclient/node');
  const client = new LanguageClient('graphmend', 'graphmend', { command: 'graphmend' }, { documentSelector: [{ language: 'python' }] });
  return JSON.parse(JSON.stringify(client.computeClientCapabilities()));
}

/** Applies LSP text edits (UTF-16 positions, as the capabilities negotiate) to `text`. */
export function applyTextEdits(text: string, edits: TextEdit[]): string {
  const lineStarts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === '\n') lineStarts.push(i + 1);
  const offset = (p: { line: number; character: number }) => {
    if (p.line >= lineStarts.length) return text.length;
    const lineEnd = p.line + 1 < lineStarts.length ? lineStarts[p.line + 1] - 1 : text.length;
    return Math.min(lineStarts[p.line] + p.character, lineEnd);
  };
  const sorted = edits
    .map((e, i) => ({ start: offset(e.range.start), end: offset(e.range.end), text: e.newText, i }))
    .sort((a, b) => a.start - b.start || a.end - b.end || a.i - b.i);
  for (let k = 1; k < sorted.length; k++) {
    if (sorted[k].start < sorted[k - 1].end) throw new Error(`overlapping edits: ${JSON.stringify(sorted)}`);
  }
  let out = '';
  let at = 0;
  for (const e of sorted) {
    out += text.slice(at, e.start) + e.text;
    at = e.end;
  }
  return out + text.slice(at);
}

/** The edits of a WorkspaceEdit for one document (changes or documentChanges). */
export function editsFor(edit: WorkspaceEdit, uri: string): TextEdit[] {
  const out: TextEdit[] = [];
  if (edit.changes?.[uri]) out.push(...edit.changes[uri]);
  for (const change of edit.documentChanges ?? []) {
    if ('textDocument' in change && change.textDocument.uri === uri) out.push(...(change.edits as TextEdit[]));
  }
  return out;
}

/**
 * The initialize parameters of the extension for a one-folder workspace: what vscode-languageclient
 * 11's initialize() fills (client.js, and processId from its Node entry), with the extension's
 * initializationOptions. The activate() test checks this against what the extension really sends.
 */
export function initializeParams(workspace: string, settings: Settings, env: Environment): InitializeParams {
  const uri = pathToFileURL(workspace).href;
  return {
    processId: process.pid,
    clientInfo: { name: 'Visual Studio Code', version: VSCODE_VERSION },
    locale: 'en',
    rootPath: workspace,
    rootUri: uri,
    capabilities: vscodeClientCapabilities(),
    initializationOptions: initializationOptions(settings, env),
    trace: settings.traceServer,
    workspaceFolders: [{ uri, name: path.basename(workspace) }],
  };
}

export interface Session {
  connection: MessageConnection;
  process: ChildProcess;
  initialize: InitializeParams;
  result: InitializeResult;
  /** Every workspace/configuration request's items and our answers. */
  configurationRequests: { section?: string; answer: unknown }[];
  pushed: PublishDiagnosticsParams[];
  logs: string[];
  stderr: string[];
  /** client/registerCapability registrations (the server's dynamic features). */
  registrations: { id: string; method: string; registerOptions?: unknown }[];
  /** Documents edited by workspace/applyEdit requests from the server. */
  applied: WorkspaceEdit[];
  exitCode: Promise<number | null>;
  close(): Promise<number | null>;
}

export async function startSession(workspace: string, settings: Settings, env: Environment = { trusted: true }): Promise<Session> {
  const binary = serverBinary();
  const found = findServer({
    configuredPath: binary,
    extensionPath: EXTENSION_ROOT,
    workspaceFolders: [workspace],
    env: process.env,
    platform: process.platform,
  });
  if (!found.ok) {
    throw new Error(`${found.message}\nbuild the server first (make build) or set GRAPHMEND_BIN`);
  }
  const proc = serverProcess(found, { ...settings, path: binary }, [workspace]);
  const child = spawn(proc.command, proc.args, { cwd: proc.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
  const stderr: string[] = [];
  child.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const exitCode = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const connection = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));

  const session: Partial<Session> & { configurationRequests: Session['configurationRequests'] } = {
    connection,
    process: child,
    configurationRequests: [],
    pushed: [],
    logs: [],
    stderr,
    applied: [],
    registrations: [],
    exitCode,
  };

  // What vscode-languageclient answers, with the extension's configuration middleware.
  connection.onRequest('workspace/configuration', (params: { items: { section?: string }[] }) =>
    params.items.map((item) => {
      const answer =
        item.section === 'graphmend' || item.section?.startsWith('graphmend.') ? configurationItem(item.section, settings, env) : null;
      session.configurationRequests.push({ section: item.section, answer });
      return answer;
    }),
  );
  connection.onRequest('client/registerCapability', (params: { registrations: Session['registrations'] }) => {
    session.registrations!.push(...params.registrations);
    return null;
  });
  connection.onRequest('client/unregisterCapability', () => null);
  connection.onRequest('window/workDoneProgress/create', () => null);
  connection.onRequest('workspace/diagnostic/refresh', () => null);
  connection.onRequest('workspace/codeLens/refresh', () => null);
  connection.onRequest('workspace/inlayHint/refresh', () => null);
  connection.onRequest('workspace/semanticTokens/refresh', () => null);
  connection.onRequest('workspace/applyEdit', (params: { edit: WorkspaceEdit }) => {
    session.applied!.push(params.edit);
    return { applied: true };
  });
  connection.onNotification('textDocument/publishDiagnostics', (params: PublishDiagnosticsParams) => {
    session.pushed!.push(params);
  });
  connection.onNotification('window/logMessage', (params: { message: string }) => {
    session.logs!.push(params.message);
  });
  connection.onNotification('window/showMessage', (params: { message: string }) => {
    session.logs!.push(`[show] ${params.message}`);
  });
  connection.onNotification('$/progress', () => undefined);
  connection.onNotification('$/logTrace', () => undefined);
  connection.listen();

  const initialize = initializeParams(workspace, settings, env);
  const result = await withTimeout(connection.sendRequest<InitializeResult>('initialize', initialize), 20000, 'initialize', stderr);
  await connection.sendNotification('initialized', {});

  session.initialize = initialize;
  session.result = result;
  session.close = async () => {
    try {
      await withTimeout(connection.sendRequest('shutdown'), 10000, 'shutdown', stderr);
      await connection.sendNotification('exit');
    } finally {
      const timer = setTimeout(() => child.kill('SIGKILL'), 10000);
      const code = await exitCode;
      clearTimeout(timer);
      connection.dispose();
      return code;
    }
  };
  return session as Session;
}

export async function withTimeout<T>(promise: PromiseLike<T>, ms: number, what: string, stderr?: string[]): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms${stderr ? `\nserver stderr:\n${stderr.join('')}` : ''}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export function fixturePath(name: string): string {
  return path.resolve(EXTENSION_ROOT, '..', '..', 'tests', 'clients', 'fixtures', name);
}

export function readFixture(name: string): string {
  return fs.readFileSync(fixturePath(name), 'utf8');
}

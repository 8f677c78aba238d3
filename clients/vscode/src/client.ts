// What the extension hands vscode-languageclient, apart from the parts that need `vscode` itself.
// Pure, so the integration test starts the server exactly as the extension does. (pyproject.toml is
// watched by the server's own dynamic registration of workspace/didChangeWatchedFiles.)
import type { Found } from './discovery';
import { serverArgs } from './server';
import type { Settings } from './settings';

export const CLIENT_ID = 'graphmend';
export const CLIENT_NAME = 'graphmend';
export const OUTPUT_CHANNEL = 'graphmend';

/**
 * Python files on disk, unsaved Python buffers, and the Python cells of notebooks. The server syncs
 * notebooks whole (notebookDocumentSync), analyses their cells together and answers hovers and code
 * actions on a cell's document: vscode-languageclient sends those for documents this selector matches,
 * a cell by its `vscode-notebook-cell` scheme or by the notebook filter.
 */
export const DOCUMENT_SELECTOR = [
  { scheme: 'file', language: 'python' },
  { scheme: 'untitled', language: 'python' },
  { scheme: 'vscode-notebook-cell', language: 'python' },
  { notebook: '*', language: 'python' },
];

export interface ServerProcess {
  command: string;
  args: string[];
  /** Working directory: the first workspace folder, so relative paths in args mean what users expect. */
  cwd?: string;
}

export function serverProcess(found: Found, settings: Settings, workspaceFolders: string[]): ServerProcess {
  const proc: ServerProcess = { command: found.command, args: serverArgs(settings) };
  if (workspaceFolders.length > 0) proc.cwd = workspaceFolders[0];
  return proc;
}

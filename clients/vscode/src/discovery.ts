// Finding the `graphmend` executable: the `graphmend.path` setting; else, with graphmend.importStrategy
// "fromEnvironment" (the default), the `graphmend` installed next to the chosen Python interpreter;
// else the binary bundled in the extension (bundled/bin/); else ("fromEnvironment" only) the first
// one on PATH. Pure apart from the injected file-system probe.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

import type { Interpreter } from './interpreter';

export type ServerSource = 'setting' | 'environment' | 'bundled' | 'PATH';

export type ImportStrategy = 'fromEnvironment' | 'useBundled';
export const IMPORT_STRATEGIES: readonly ImportStrategy[] = ['fromEnvironment', 'useBundled'];

/** Where the .vsix carries the server, relative to the extension's folder. */
export const BUNDLED_BIN_DIR = ['bundled', 'bin'] as const;

export interface Found {
  ok: true;
  command: string;
  source: ServerSource;
}

export interface NotFound {
  ok: false;
  message: string;
  /** Every place that was looked at, in order. */
  tried: string[];
}

export interface DiscoveryInput {
  /** `graphmend.path`, already trimmed; null when unset. */
  configuredPath: string | null;
  /** Folder of the installed extension (`context.extensionPath`). */
  extensionPath: string;
  /** File-system paths of the workspace folders; the first resolves relative settings. */
  workspaceFolders: string[];
  env: NodeJS.ProcessEnv;
  platform: NodeJS.Platform;
  homedir?: string;
  /** Whether `file` is a regular file the user may execute. */
  isExecutable?: (file: string) => boolean;
  /** graphmend.importStrategy; "fromEnvironment" when absent. */
  importStrategy?: ImportStrategy;
  /** The interpreter chosen for validation (interpreter.ts chooseInterpreter), for "fromEnvironment". */
  interpreter?: Interpreter;
  /**
   * `vscode.workspace.isTrusted`; true when absent. In an untrusted workspace the environment's
   * `graphmend` is not run: the interpreter may be the workspace's own .venv.
   */
  trusted?: boolean;
}

export function isExecutableFile(file: string): boolean {
  try {
    const st = fs.statSync(file);
    if (!st.isFile()) return false;
    if (process.platform === 'win32') return true;
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function pathApi(platform: NodeJS.Platform): path.PlatformPath {
  return platform === 'win32' ? path.win32 : path.posix;
}

export function executableName(platform: NodeJS.Platform): string {
  return platform === 'win32' ? 'graphmend.exe' : 'graphmend';
}

/** Environment lookup that is case-insensitive on Windows, where PATH may be spelled Path. */
function envValue(env: NodeJS.ProcessEnv, name: string, platform: NodeJS.Platform): string | undefined {
  if (platform !== 'win32') return env[name];
  const key = Object.keys(env).find((k) => k.toUpperCase() === name.toUpperCase());
  return key === undefined ? undefined : env[key];
}

/**
 * Expands `~`, `${userHome}`, `${workspaceFolder}` and `${env:NAME}` in a setting, and resolves a
 * relative result against the first workspace folder. Returns null (with the reason) when a variable
 * cannot be expanded.
 */
export function expandPath(value: string, input: DiscoveryInput): { path: string } | { error: string } {
  const p = pathApi(input.platform);
  const home = input.homedir ?? os.homedir();
  const folder = input.workspaceFolders[0];
  let missing: string | null = null;
  let out = value.replace(/\$\{([^}]+)\}/g, (whole, name: string) => {
    if (name === 'userHome') return home;
    if (name === 'workspaceFolder' || name === 'workspaceRoot') {
      if (folder === undefined) missing = `${whole} needs an open workspace folder`;
      return folder ?? '';
    }
    if (name.startsWith('env:')) return envValue(input.env, name.slice(4), input.platform) ?? '';
    missing = `unknown variable ${whole}`;
    return whole;
  });
  if (missing !== null) return { error: missing };
  if (out === '~') out = home;
  else if (out.startsWith('~/') || (input.platform === 'win32' && out.startsWith('~\\'))) out = p.join(home, out.slice(2));
  if (!p.isAbsolute(out)) {
    // A bare name ("graphmend-dev") is looked up on PATH, like a shell would.
    if (!out.includes('/') && !(input.platform === 'win32' && out.includes('\\'))) {
      const onPath = searchPath(out, input);
      if (onPath !== null) return { path: onPath };
    }
    if (folder === undefined) return { error: `relative path "${value}" needs an open workspace folder` };
    out = p.resolve(folder, out);
  }
  return { path: out };
}

/** The PATH entries and, on Windows, PATHEXT suffixes tried for `name`. */
function pathCandidates(name: string, input: DiscoveryInput): string[] {
  const p = pathApi(input.platform);
  const delimiter = input.platform === 'win32' ? ';' : ':';
  const dirs = (envValue(input.env, 'PATH', input.platform) ?? '').split(delimiter).filter((d) => d !== '');
  let exts = [''];
  if (input.platform === 'win32' && p.extname(name) === '') {
    exts = (envValue(input.env, 'PATHEXT', input.platform) ?? '.COM;.EXE;.BAT;.CMD').split(';').filter((e) => e !== '');
  }
  const out: string[] = [];
  for (const dir of dirs) for (const ext of exts) out.push(p.join(dir.replace(/^"(.*)"$/, '$1'), name + ext));
  return out;
}

function searchPath(name: string, input: DiscoveryInput): string | null {
  const probe = input.isExecutable ?? isExecutableFile;
  for (const candidate of pathCandidates(name, input)) if (probe(candidate)) return candidate;
  return null;
}

/** The bundled server: `<extension>/bundled/bin/graphmend`. */
export function bundledExecutable(input: Pick<DiscoveryInput, 'extensionPath' | 'platform'>): string {
  return pathApi(input.platform).join(input.extensionPath, ...BUNDLED_BIN_DIR, executableName(input.platform));
}

/**
 * The `graphmend` installed in the interpreter's environment, next to it (`<dirname(python)>/graphmend`),
 * for importStrategy "fromEnvironment"; null for the default interpreter (python3, nothing chosen) and
 * for one that is not an absolute path after expanding `~` and variables.
 */
export function environmentExecutable(interpreter: Interpreter | undefined, input: DiscoveryInput): string | null {
  if (interpreter === undefined || interpreter.source === 'default') return null;
  const p = pathApi(input.platform);
  const expanded = expandPath(interpreter.python, input);
  if ('error' in expanded || !p.isAbsolute(expanded.path)) return null;
  return p.join(p.dirname(expanded.path), executableName(input.platform));
}

export function findServer(input: DiscoveryInput): Found | NotFound {
  const probe = input.isExecutable ?? isExecutableFile;
  const tried: string[] = [];

  if (input.configuredPath !== null) {
    // An explicit setting never falls back: running some other graphmend would hide the mistake.
    const expanded = expandPath(input.configuredPath, input);
    if ('error' in expanded) {
      return { ok: false, message: `graphmend.path: ${expanded.error}`, tried: [input.configuredPath] };
    }
    if (probe(expanded.path)) return { ok: true, command: expanded.path, source: 'setting' };
    return {
      ok: false,
      message: `graphmend.path is set to "${input.configuredPath}", but ${expanded.path} is not an executable file`,
      tried: [expanded.path],
    };
  }

  const strategy = input.importStrategy ?? 'fromEnvironment';
  if (strategy === 'fromEnvironment' && input.trusted !== false) {
    const fromEnv = environmentExecutable(input.interpreter, input);
    if (fromEnv !== null) {
      tried.push(fromEnv);
      if (probe(fromEnv)) return { ok: true, command: fromEnv, source: 'environment' };
    }
  }

  const bundled = bundledExecutable(input);
  tried.push(bundled);
  if (probe(bundled)) return { ok: true, command: bundled, source: 'bundled' };
  if (strategy === 'useBundled') {
    return {
      ok: false,
      message: `graphmend.importStrategy is "useBundled", but this extension carries no bundled server (${bundled}): install a platform-specific .vsix, or set graphmend.importStrategy to "fromEnvironment" or graphmend.path`,
      tried,
    };
  }

  const name = executableName(input.platform).replace(/\.exe$/, '');
  for (const candidate of pathCandidates(name, input)) {
    tried.push(candidate);
    if (probe(candidate)) return { ok: true, command: candidate, source: 'PATH' };
  }
  return {
    ok: false,
    message: 'graphmend executable not found: set graphmend.path, install graphmend in the selected Python environment, or put graphmend on PATH',
    tried,
  };
}

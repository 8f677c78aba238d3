// Choosing the Python interpreter for validation (and, with graphmend.importStrategy "fromEnvironment",
// the environment whose `graphmend` runs the server): graphmend.validator.python, else the interpreter
// selected in the Python extension (ms-python.python), else a .venv in the workspace folder, else
// python3. Pure apart from the injected file-system probe: no `vscode` import.
import * as path from 'path';

import { isExecutableFile } from './discovery';

export const PYTHON_EXTENSION_ID = 'ms-python.python';

/** The parts of the Python extension's API (its `exports`) that are read here. */
export interface PythonExtensionApi {
  environments?: {
    /** `{ id, path }`: the interpreter, or the environment's folder (conda envs without python). */
    getActiveEnvironmentPath?(resource?: unknown): { id?: unknown; path?: unknown } | undefined;
  };
  /** The older API, still exported: `execCommand[0]` is the interpreter. */
  settings?: {
    getExecutionDetails?(resource?: unknown): { execCommand?: unknown } | undefined;
  };
}

/**
 * `setting`: graphmend.validator.python; `python extension`: the Python extension's selection;
 * `workspace venv`: `.venv` (or `venv`) in the first workspace folder; `default`: python3, left to the
 * server (which also looks for a .venv above the validated file before using python3).
 */
export type InterpreterSource = 'setting' | 'python extension' | 'workspace venv' | 'default';

export interface Interpreter {
  python: string;
  source: InterpreterSource;
}

export interface InterpreterInput {
  /** graphmend.validator.python, trimmed; null when unset. */
  configured: string | null;
  /** The Python extension's exports; undefined when it is not installed (or failed to activate). */
  pythonApi: PythonExtensionApi | undefined;
  /** Passed to the Python extension's API: the interpreter may differ per workspace folder. */
  resource?: unknown;
  workspaceFolders: string[];
  platform: NodeJS.Platform;
  isExecutable?: (file: string) => boolean;
}

export const DEFAULT_PYTHON = 'python3';

function pathApi(platform: NodeJS.Platform): path.PlatformPath {
  return platform === 'win32' ? path.win32 : path.posix;
}

/** The interpreter of a virtual environment's folder (`bin/python`, `Scripts\python.exe`). */
export function venvPython(dir: string, platform: NodeJS.Platform): string {
  const p = pathApi(platform);
  return platform === 'win32' ? p.join(dir, 'Scripts', 'python.exe') : p.join(dir, 'bin', 'python');
}

/** What the Python extension has selected, as an absolute interpreter path; null when nothing usable. */
export function pythonExtensionInterpreter(api: PythonExtensionApi | undefined, input: InterpreterInput): string | null {
  if (api === undefined || api === null) return null;
  const p = pathApi(input.platform);
  const probe = input.isExecutable ?? isExecutableFile;
  const candidates: string[] = [];
  try {
    const active = api.environments?.getActiveEnvironmentPath?.(input.resource);
    if (active && typeof active.path === 'string') candidates.push(active.path);
  } catch {
    // An API that throws is as good as none.
  }
  if (candidates.length === 0) {
    try {
      const exec = api.settings?.getExecutionDetails?.(input.resource)?.execCommand;
      if (Array.isArray(exec) && typeof exec[0] === 'string') candidates.push(exec[0]);
    } catch {
      // ditto
    }
  }
  for (const candidate of candidates) {
    // A bare "python" is the extension's default when nothing is selected: not a choice.
    if (!p.isAbsolute(candidate)) continue;
    if (probe(candidate)) return candidate;
    // An environment's folder rather than its interpreter.
    const inside = venvPython(candidate, input.platform);
    if (probe(inside)) return inside;
  }
  return null;
}

export function chooseInterpreter(input: InterpreterInput): Interpreter {
  if (input.configured !== null) return { python: input.configured, source: 'setting' };
  const fromExtension = pythonExtensionInterpreter(input.pythonApi, input);
  if (fromExtension !== null) return { python: fromExtension, source: 'python extension' };
  const probe = input.isExecutable ?? isExecutableFile;
  const folder = input.workspaceFolders[0];
  if (folder !== undefined) {
    const p = pathApi(input.platform);
    for (const name of ['.venv', 'venv']) {
      const candidate = venvPython(p.join(folder, name), input.platform);
      if (probe(candidate)) return { python: candidate, source: 'workspace venv' };
    }
  }
  return { python: DEFAULT_PYTHON, source: 'default' };
}

/**
 * What the server and `graphmend validate --python` receive: the chosen interpreter, except the
 * default, which is left to the server's own search (a .venv above the validated file, then python3).
 */
export function validatorPython(interpreter: Interpreter | undefined): string | null {
  if (interpreter === undefined || interpreter.source === 'default') return null;
  return interpreter.python;
}

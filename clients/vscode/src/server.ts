// How the extension starts and talks to `graphmend server`: command lines, the fix-all code action
// kind, and the text of the status item. Pure: no `vscode` import.
import type { Settings } from './settings';

export const FIX_ALL_KIND = 'source.fixAll.graphmend';
export const APPLY_AUTOFIX_COMMAND = 'graphmend.applyAutofix';
export const VALIDATE_COMMAND = 'graphmend.validate';

/** Arguments of the server process: `graphmend server` followed by `graphmend.args`. */
export function serverArgs(settings: Settings): string[] {
  const extra = [...settings.args];
  // Users coming from other tools often write the subcommand themselves; do not repeat it.
  if (extra[0] === 'server') extra.shift();
  return ['server', ...extra];
}

/**
 * Command line of `graphmend validate` for a target ("path/to/model.py::factory"), used when the server
 * does not offer validation as a workspace command; `deploy` adds the deploy proof (`--deploy`), `python`
 * the interpreter chosen when graphmend.validator.python is unset (interpreter.ts validatorPython).
 */
export function validateArgs(target: string, settings: Settings, deploy = false,
                             python: string | null = settings.validatorPython): string[] {
  const args = ['validate', target];
  // The deploy proof: torch.export, an AOTInductor package and a C++ run of each arm.
  if (deploy) args.push('--deploy');
  // graphmend.validator.python, else the chosen interpreter (null: the server's own choice).
  const py = settings.validatorPython ?? python;
  if (py !== null) args.push('--python', py);
  return args;
}

/**
 * A validation target is `file.py::factory`: a callable in the file that returns the model (or
 * function) and its example inputs, as `graphmend validate` expects.
 */
export function parseTarget(target: string): { file: string; callable: string } | { error: string } {
  const trimmed = target.trim();
  if (trimmed === '') return { error: 'empty target' };
  const sep = trimmed.lastIndexOf('::');
  if (sep < 0) return { error: 'a target is file.py::factory' };
  const file = trimmed.slice(0, sep);
  const callable = trimmed.slice(sep + 2);
  if (!file.endsWith('.py')) return { error: `"${file}" is not a Python file` };
  if (!/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/.test(callable)) {
    return { error: callable === '' ? 'name the factory after ::' : `"${callable}" is not a Python name` };
  }
  return { file, callable };
}

/** Factory names looked for, in order, when suggesting a target for a file. */
export const FACTORY_NAMES = ['example', 'make_example', 'make_model', 'build_model', 'factory'];

/** The target the Validate command proposes for a file: its first top-level factory, if any. */
export function suggestTarget(relativePath: string, text: string): string {
  const defined = new Set([...text.matchAll(/^def\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(/gm)].map((m) => m[1]));
  const name = FACTORY_NAMES.find((n) => defined.has(n));
  return `${relativePath}::${name ?? ''}`;
}

interface KindedAction {
  kind?: string;
  command?: unknown;
  edit?: unknown;
  title: string;
}

function isCommand(item: unknown): boolean {
  // A Command has a string `command`; a CodeAction's `command` (if any) is an object.
  return typeof (item as { command?: unknown }).command === 'string';
}

/** The server's fix-all action among a code action response (kind matched by prefix, per LSP). */
export function pickFixAll<T extends KindedAction>(actions: readonly unknown[] | null | undefined): T | undefined {
  for (const item of actions ?? []) {
    if (isCommand(item)) continue;
    const kind = (item as KindedAction).kind;
    if (kind === FIX_ALL_KIND || kind?.startsWith(FIX_ALL_KIND + '.')) return item as T;
  }
  return undefined;
}

export type ServerState = 'starting' | 'running' | 'stopped' | 'failed';

export interface StatusText {
  text: string;
  detail: string;
  severity: 'information' | 'warning' | 'error';
}

export function statusText(state: ServerState, version: string | undefined, detail?: string): StatusText {
  const name = version ? `graphmend ${version}` : 'graphmend';
  switch (state) {
    case 'starting':
      return { text: `$(sync~spin) ${name}`, detail: detail ?? 'starting', severity: 'information' };
    case 'running':
      return { text: `$(check) ${name}`, detail: detail ?? 'running', severity: 'information' };
    case 'stopped':
      return { text: `$(circle-slash) ${name}`, detail: detail ?? 'stopped', severity: 'warning' };
    case 'failed':
      return { text: `$(error) ${name}`, detail: detail ?? 'failed to start', severity: 'error' };
  }
}

// The extension's settings and what the server receives from them. Pure: no `vscode` import, so the
// unit tests and the integration test (which must send exactly what the extension sends) share it.
import { IMPORT_STRATEGIES, ImportStrategy } from './discovery';
import { Interpreter, validatorPython } from './interpreter';

export type RunMode = 'onType' | 'onSave';
export type LogLevel = 'error' | 'warn' | 'info' | 'debug' | 'trace';
export type TraceLevel = 'off' | 'messages' | 'verbose';
export type Scope = 'compiled' | 'all';
/** ruff's `configurationPreference`: which wins when the editor's settings and pyproject.toml disagree. */
export type ConfigurationPreference = 'editorFirst' | 'filesystemFirst' | 'editorOnly';

export const RUN_MODES: readonly RunMode[] = ['onType', 'onSave'];
export const LOG_LEVELS: readonly LogLevel[] = ['error', 'warn', 'info', 'debug', 'trace'];
export const TRACE_LEVELS: readonly TraceLevel[] = ['off', 'messages', 'verbose'];
export const SCOPES: readonly Scope[] = ['compiled', 'all'];
export const CONFIGURATION_PREFERENCES: readonly ConfigurationPreference[] = ['editorFirst', 'filesystemFirst', 'editorOnly'];

/** Every `graphmend.*` setting, normalized. */
export interface Settings {
  path: string | null;
  args: string[];
  importStrategy: ImportStrategy;
  validatorPython: string | null;
  configurationPreference: ConfigurationPreference;
  select: string[];
  ignore: string[];
  /** null: pyproject.toml's scope, else "compiled". */
  scope: Scope | null;
  run: RunMode;
  fixAll: boolean;
  unsafeFixes: boolean;
  validateEnable: boolean;
  logLevel: LogLevel;
  traceServer: TraceLevel;
}

export const DEFAULT_SETTINGS: Readonly<Settings> = Object.freeze({
  path: null,
  args: [],
  importStrategy: 'fromEnvironment',
  validatorPython: null,
  configurationPreference: 'editorFirst',
  select: [],
  ignore: [],
  scope: null,
  run: 'onType',
  fixAll: true,
  unsafeFixes: false,
  validateEnable: true,
  logLevel: 'info',
  traceServer: 'off',
});

/** Setting keys below `graphmend.`, as declared in package.json's contributes.configuration. */
export const SETTING_KEYS = [
  'path',
  'args',
  'importStrategy',
  'validator.python',
  'configurationPreference',
  'select',
  'ignore',
  'scope',
  'run',
  'fixAll',
  'unsafeFixes',
  'validate.enable',
  'logLevel',
  'trace.server',
] as const;
export type SettingKey = (typeof SETTING_KEYS)[number];

/**
 * Settings that name programs to execute. In an untrusted workspace VS Code ignores their workspace
 * values (package.json `capabilities.untrustedWorkspaces.restrictedConfigurations`).
 */
export const RESTRICTED_KEYS: readonly SettingKey[] = ['path', 'args', 'validator.python'];

/** Reads one raw setting value (`vscode.WorkspaceConfiguration.get` in the extension). */
export type SettingGetter = (key: SettingKey) => unknown;

/** Problems met while reading settings: the extension logs them, the value falls back to the default. */
export interface SettingsResult {
  settings: Settings;
  warnings: string[];
}

function nonEmptyString(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const trimmed = value.trim();
  return trimmed === '' ? null : trimmed;
}

function stringList(key: SettingKey, value: unknown, warnings: string[]): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    warnings.push(`graphmend.${key} must be an array of strings; ignored`);
    return [];
  }
  const out: string[] = [];
  for (const item of value) {
    if (typeof item === 'string') out.push(item);
    else warnings.push(`graphmend.${key}: ignoring non-string entry ${JSON.stringify(item)}`);
  }
  return out;
}

/** Rule code prefixes ("GM", "GM1", "GM101"); anything else is dropped with a warning. */
function codeList(key: SettingKey, value: unknown, warnings: string[]): string[] {
  const out: string[] = [];
  for (const raw of stringList(key, value, warnings)) {
    const code = raw.trim().toUpperCase();
    if (/^GM\d{0,3}$/.test(code)) {
      if (!out.includes(code)) out.push(code);
    } else {
      warnings.push(`graphmend.${key}: "${raw}" is not a rule code or prefix (like GM, GM1, GM101); ignored`);
    }
  }
  return out;
}

function oneOf<T extends string>(key: SettingKey, value: unknown, allowed: readonly T[], fallback: T,
                                 warnings: string[]): T {
  if (value === undefined || value === null) return fallback;
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  warnings.push(`graphmend.${key} must be one of ${allowed.join(', ')}; using ${fallback}`);
  return fallback;
}

function bool(key: SettingKey, value: unknown, fallback: boolean, warnings: string[]): boolean {
  if (value === undefined || value === null) return fallback;
  if (typeof value === 'boolean') return value;
  warnings.push(`graphmend.${key} must be true or false; using ${fallback}`);
  return fallback;
}

export function readSettings(get: SettingGetter): SettingsResult {
  const warnings: string[] = [];
  const d = DEFAULT_SETTINGS;
  const settings: Settings = {
    path: nonEmptyString(get('path')),
    args: stringList('args', get('args'), warnings),
    importStrategy: oneOf('importStrategy', get('importStrategy'), IMPORT_STRATEGIES, d.importStrategy, warnings),
    validatorPython: nonEmptyString(get('validator.python')),
    configurationPreference: oneOf('configurationPreference', get('configurationPreference'), CONFIGURATION_PREFERENCES,
                                   d.configurationPreference, warnings),
    select: codeList('select', get('select'), warnings),
    ignore: codeList('ignore', get('ignore'), warnings),
    scope: get('scope') === null || get('scope') === undefined ? null : oneOf('scope', get('scope'), SCOPES, 'compiled', warnings),
    run: oneOf('run', get('run'), RUN_MODES, d.run, warnings),
    fixAll: bool('fixAll', get('fixAll'), d.fixAll, warnings),
    unsafeFixes: bool('unsafeFixes', get('unsafeFixes'), d.unsafeFixes, warnings),
    validateEnable: bool('validate.enable', get('validate.enable'), d.validateEnable, warnings),
    logLevel: oneOf('logLevel', get('logLevel'), LOG_LEVELS, d.logLevel, warnings),
    traceServer: oneOf('trace.server', get('trace.server'), TRACE_LEVELS, d.traceServer, warnings),
  };
  return { settings, warnings };
}

/**
 * What the server receives, both as `initializationOptions` and as the answer to
 * `workspace/configuration` for section "graphmend": the `graphmend.*` settings the server acts on,
 * in the same nesting as VS Code's settings (so generic clients write the same keys).
 * `select`/`ignore`/`scope` are left out when unset, so that pyproject.toml's [tool.graphmend] applies;
 * `configurationPreference` is left out when it is the server's default, `editorFirst`.
 */
export interface ServerSettings {
  configurationPreference?: ConfigurationPreference;
  select?: string[];
  ignore?: string[];
  scope?: Scope;
  run: RunMode;
  fixAll: boolean;
  unsafeFixes: boolean;
  validate: { enable: boolean };
  validator: { python?: string };
  logLevel: LogLevel;
}

export interface Environment {
  /** `vscode.workspace.isTrusted`: validation runs user code, so it is off in untrusted workspaces. */
  trusted: boolean;
  /**
   * The interpreter chosen for validation (interpreter.ts chooseInterpreter): sent as validator.python
   * unless it is the default, which the server finds itself. graphmend.validator.python wins over it.
   */
  interpreter?: Interpreter;
}

export function serverSettings(settings: Settings, env: Environment): ServerSettings {
  const out: ServerSettings = {
    run: settings.run,
    fixAll: settings.fixAll,
    unsafeFixes: settings.unsafeFixes,
    validate: { enable: settings.validateEnable && env.trusted },
    validator: {},
    logLevel: settings.logLevel,
  };
  if (settings.configurationPreference !== 'editorFirst') out.configurationPreference = settings.configurationPreference;
  if (settings.select.length > 0) out.select = [...settings.select];
  if (settings.ignore.length > 0) out.ignore = [...settings.ignore];
  if (settings.scope !== null) out.scope = settings.scope;
  const python = settings.validatorPython ?? validatorPython(env.interpreter);
  if (python !== null) out.validator.python = python;
  return out;
}

export const initializationOptions = serverSettings;

/** The configuration section the server asks for with `workspace/configuration`. */
export const CONFIG_SECTION = 'graphmend';

/**
 * Answers one `workspace/configuration` item. The server's own section gets `serverSettings`; a
 * sub-section ("graphmend.validate") gets the matching part; anything else is not ours (null).
 */
export function configurationItem(section: string | undefined, settings: Settings, env: Environment): unknown {
  const all = serverSettings(settings, env) as unknown as Record<string, unknown>;
  if (section === undefined || section === CONFIG_SECTION) return all;
  if (!section.startsWith(CONFIG_SECTION + '.')) return null;
  let node: unknown = all;
  for (const part of section.slice(CONFIG_SECTION.length + 1).split('.')) {
    if (node === null || typeof node !== 'object' || !(part in (node as Record<string, unknown>))) return null;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

/**
 * Whether a configuration change needs a client restart. `trace.server` is applied live by
 * vscode-languageclient; every other setting changes how the server is started or initialized.
 */
export function needsRestart(affects: (key: string) => boolean): boolean {
  return SETTING_KEYS.some((key) => key !== 'trace.server' && affects(`${CONFIG_SECTION}.${key}`));
}

/** Whether two readings are equal: a change event that altered nothing effective needs no restart. */
export function sameSettings(a: Settings, b: Settings): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

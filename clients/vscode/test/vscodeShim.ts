// A stand-in for the `vscode` module, for code that must load vscode-languageclient (or the bundled
// extension) outside VS Code. Every property is a callable, constructible object; `version` is the
// lowest VS Code the extension declares. Nothing here downloads or starts VS Code.
import Module from 'node:module';

import { manifest } from './paths';

type AnyFn = ((...args: unknown[]) => unknown) & Record<PropertyKey, unknown>;

function stub(name: string): AnyFn {
  const target = function () {} as unknown as AnyFn;
  return new Proxy(target, {
    get(t, prop) {
      if (prop === 'then') return undefined; // not a thenable
      if (prop === Symbol.toPrimitive) return () => name;
      if (prop === 'prototype') return t.prototype;
      if (!(prop in t)) t[prop] = stub(`${name}.${String(prop)}`);
      return t[prop];
    },
    apply: () => stub(`${name}()`),
    construct: () => stub(`new ${name}`),
  }) as AnyFn;
}

export const VSCODE_VERSION = manifest.engines.vscode.replace(/^[\^~>=]+/, '');

let installed: AnyFn | undefined;

/** Replaces one member of the stand-in (or of one of its namespaces) with a real value. */
export function override(target: unknown, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, configurable: true, writable: true });
}

/** Makes `require('vscode')` return the stand-in, and returns it. */
export function installVscodeShim(): AnyFn {
  if (installed) return installed;
  const vscode = stub('vscode');
  installed = vscode;
  Object.defineProperty(vscode, 'version', { value: VSCODE_VERSION });
  Object.defineProperty(vscode, 'env', { value: { appName: 'Visual Studio Code', language: 'en' } });
  const mod = Module as unknown as {
    _resolveFilename: (request: string, ...rest: unknown[]) => string;
    };
  const resolve = mod._resolveFilename;
  mod._resolveFilename = function (request: string, ...rest: unknown[]) {
    if (request === 'vscode') return 'vscode';
    return resolve.call(this, request, ...rest);
  };
  require.cache['vscode'] = { id: 'vscode', filename: 'vscode', loaded: true, exports: vscode } as unknown as NodeJS.Module;
  return vscode;
}

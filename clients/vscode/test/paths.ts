// Where things are, for tests compiled to out/test/ and run from anywhere.
import * as fs from 'node:fs';
import * as path from 'node:path';

/** clients/vscode: the folder with the extension's package.json. */
export const EXTENSION_ROOT = (() => {
  let dir = __dirname;
  for (;;) {
    const candidate = path.join(dir, 'package.json');
    if (fs.existsSync(candidate) && JSON.parse(fs.readFileSync(candidate, 'utf8')).name === 'graphmend') return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no graphmend package.json above ${__dirname}`);
    dir = parent;
  }
})();

/** The repository root (clients/vscode/../..). */
export const REPO_ROOT = path.resolve(EXTENSION_ROOT, '..', '..');

export interface Manifest {
  name: string;
  version: string;
  main: string;
  engines: { vscode: string; node: string };
  activationEvents: string[];
  capabilities: { untrustedWorkspaces: { supported: string; restrictedConfigurations: string[] } };
  contributes: {
    commands: { command: string; title: string }[];
    configuration: { properties: Record<string, { default: unknown; type: unknown; enum?: string[] }> };
  };
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
}

export const manifest: Manifest = JSON.parse(fs.readFileSync(path.join(EXTENSION_ROOT, 'package.json'), 'utf8'));

#!/usr/bin/env node
// Before `vsce package`: copy the server named by GRAPHMEND_BUNDLE (a built `graphmend`) into bin/,
// so the .vsix carries its own server. Without GRAPHMEND_BUNDLE the .vsix has no server and the
// extension uses graphmend.path or PATH; a stale bin/ from an earlier run is removed.
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..');
const binDir = path.join(root, 'bin');
const source = process.env.GRAPHMEND_BUNDLE;
fs.rmSync(binDir, { recursive: true, force: true });
if (!source) {
  console.log('bundle-server: GRAPHMEND_BUNDLE not set; packaging without a bundled server');
  process.exit(0);
}
const from = path.resolve(source);
let st;
try {
  st = fs.statSync(from);
} catch {
  console.error(`bundle-server: GRAPHMEND_BUNDLE=${source}: no such file`);
  process.exit(1);
}
if (!st.isFile()) {
  console.error(`bundle-server: GRAPHMEND_BUNDLE=${source} is not a file`);
  process.exit(1);
}
const name = process.platform === 'win32' ? 'graphmend.exe' : 'graphmend';
fs.mkdirSync(binDir, { recursive: true });
fs.copyFileSync(from, path.join(binDir, name));
fs.chmodSync(path.join(binDir, name), 0o755);
console.log(`bundle-server: bundled ${from} as bin/${name}`);

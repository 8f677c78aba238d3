// The capabilities the integration test sends are vscode-languageclient's own, computed by the library.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { applyTextEdits, editsFor, vscodeClientCapabilities } from '../integration/session';

describe('vscodeClientCapabilities', () => {
  const caps = vscodeClientCapabilities();
  it('are those of vscode-languageclient 11', () => {
    assert.deepEqual(caps.general?.positionEncodings, ['utf-16']);
    assert.equal(caps.workspace?.configuration, true);
    assert.equal(caps.workspace?.applyEdit, true);
    assert.deepEqual(caps.textDocument?.codeAction?.resolveSupport, { properties: ['edit', 'command'] });
    assert.equal(caps.textDocument?.codeAction?.dataSupport, true);
    // 'source' covers source.fixAll.graphmend (kinds are hierarchical).
    assert.ok(caps.textDocument?.codeAction?.codeActionLiteralSupport?.codeActionKind.valueSet.includes('source'));
    assert.equal(caps.textDocument?.publishDiagnostics?.dataSupport, true);
    assert.ok(caps.textDocument?.diagnostic, 'pull diagnostics');
    assert.equal(caps.textDocument?.diagnostic?.markupMessageSupport, false);
    assert.ok(caps.textDocument?.hover?.contentFormat?.includes('markdown'));
    assert.equal(caps.textDocument?.synchronization?.didSave, true);
  });
});

describe('applyTextEdits', () => {
  const r = (l1: number, c1: number, l2: number, c2: number) => ({ start: { line: l1, character: c1 }, end: { line: l2, character: c2 } });
  it('counts UTF-16 code units', () => {
    // "🔥" is two UTF-16 code units: character 3 is right after it.
    assert.equal(applyTextEdits('a🔥b\nc\n', [{ range: r(0, 3, 0, 4), newText: 'X' }]), 'a🔥X\nc\n');
  });
  it('applies several edits against the original text', () => {
    const text = 'one\ntwo\nthree\n';
    const out = applyTextEdits(text, [
      { range: r(2, 0, 2, 5), newText: '3' },
      { range: r(0, 0, 0, 3), newText: '1' },
      { range: r(1, 3, 1, 3), newText: '!' },
    ]);
    assert.equal(out, '1\ntwo!\n3\n');
  });
  it('inserts at the end and refuses overlaps', () => {
    assert.equal(applyTextEdits('x\n', [{ range: r(1, 0, 1, 0), newText: 'y\n' }]), 'x\ny\n');
    assert.throws(() => applyTextEdits('abcdef', [{ range: r(0, 0, 0, 3), newText: '' }, { range: r(0, 2, 0, 4), newText: '' }]), /overlapping/);
  });
  it('reads changes and documentChanges', () => {
    const e = { range: r(0, 0, 0, 0), newText: 'x' };
    assert.deepEqual(editsFor({ changes: { 'file:///a': [e] } }, 'file:///a'), [e]);
    assert.deepEqual(editsFor({ documentChanges: [{ textDocument: { uri: 'file:///a', version: 1 }, edits: [e] }] }, 'file:///a'), [e]);
    assert.deepEqual(editsFor({ changes: { 'file:///b': [e] } }, 'file:///a'), []);
  });
});

// grammar.test.js — colourisation test for the VS Code grammar (editors/vscode).
//
// 1. Tokenizes examples/rowsum/rowsum.etl with vscode-textmate and compares the
//    (token, innermost scope) pairs of the lines listed in rowsum.golden with
//    that file. Regenerate after an intended grammar change with
//      node tests/editor/grammar.test.js --update
//    and review the diff.
// 2. Checks that every keyword of grammar/ETL.g4 (each identifier-like literal
//    such as 'kernel') is highlighted as a keyword, type, builtin or constant,
//    so the editor grammar cannot fall behind the language.
// Run through tests/editor/run.sh, which installs the npm dependencies.
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..', '..');
const ext = path.join(root, 'editors', 'vscode');
const need = (name) => require(path.join(ext, 'node_modules', name));
const vsctm = need('vscode-textmate');
const oniguruma = need('vscode-oniguruma');

const example = path.join(root, 'examples', 'rowsum', 'rowsum.etl');
const goldenFile = path.join(__dirname, 'rowsum.golden');
const g4File = process.env.ETL_GRAMMAR_G4 || path.join(root, 'grammar', 'ETL.g4');
// 1-based line numbers of rowsum.etl whose tokens the golden file pins down.
const goldenLines = [1, 10, 13, 15, 17, 18, 19, 23, 24, 25];

let failures = 0;
const fail = (msg) => { failures++; console.error(`FAIL: ${msg}`); };

async function loadGrammar() {
  const wasm = fs.readFileSync(path.join(ext, 'node_modules', 'vscode-oniguruma', 'release', 'onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scopeName) => {
      if (scopeName !== 'source.etl') return null;
      const file = path.join(ext, 'syntaxes', 'etl.tmLanguage.json');
      return vsctm.parseRawGrammar(fs.readFileSync(file, 'utf8'), file);
    },
  });
  return registry.loadGrammar('source.etl');
}

// Returns, per line, the non-blank tokens as [text, innermost scope].
function tokenize(grammar, text) {
  let state = vsctm.INITIAL;
  return text.split('\n').map((line) => {
    const r = grammar.tokenizeLine(line, state);
    state = r.ruleStack;
    return r.tokens
      .map((t) => [line.slice(t.startIndex, t.endIndex), t.scopes[t.scopes.length - 1]])
      .filter(([s]) => s.trim() !== '');
  });
}

const format = (lineNo, [text, scope]) => `${lineNo}\t${JSON.stringify(text.trim())}\t${scope}`;

function checkGolden(grammar, update) {
  const lines = tokenize(grammar, fs.readFileSync(example, 'utf8'));
  const actual = goldenLines.flatMap((n) => lines[n - 1].map((tok) => format(n, tok)));
  if (update) {
    const header = '# line<TAB>token (JSON)<TAB>innermost scope, for examples/rowsum/rowsum.etl\n' +
                   '# regenerate: node tests/editor/grammar.test.js --update\n';
    fs.writeFileSync(goldenFile, header + actual.join('\n') + '\n');
    console.log(`updated ${path.relative(root, goldenFile)} (${actual.length} tokens)`);
    return;
  }
  const expected = fs.readFileSync(goldenFile, 'utf8').split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'));
  const n = Math.max(expected.length, actual.length);
  let shown = 0;
  for (let i = 0; i < n; i++) {
    if (expected[i] === actual[i]) continue;
    if (shown++ < 10) fail(`token ${i + 1}: expected ${expected[i] ?? '(none)'}, got ${actual[i] ?? '(none)'}`);
    else failures++;
  }
  console.log(`golden: ${actual.length} tokens on ${goldenLines.length} lines of rowsum.etl` +
              (shown ? `, ${shown} differ` : ', all match'));
}

// Identifier-like literals of the ANTLR grammar ('kernel', 'f32', ...), comments removed.
function grammarKeywords() {
  if (!fs.existsSync(g4File)) {
    fail(`${path.relative(root, g4File)} not found: cannot check the keyword list against the grammar`);
    return [];
  }
  const src = fs.readFileSync(g4File, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/.*$/gm, '');
  const words = new Set();
  for (const m of src.matchAll(/'((?:[^'\\]|\\.)*)'/g)) {
    if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(m[1])) words.add(m[1]);
  }
  return [...words].sort();
}

const keywordScope = /^(keyword|storage|support|constant\.language)\./;

function checkKeywords(grammar) {
  const words = grammarKeywords();
  const missing = words.filter((w) => {
    const [[tok]] = tokenize(grammar, w);
    return !(tok && tok[0] === w && keywordScope.test(tok[1]));
  });
  for (const w of missing) {
    fail(`keyword '${w}' of ${path.relative(root, g4File)} is not highlighted as a keyword, ` +
         'type, builtin or constant: add it to editors/vscode/syntaxes/etl.tmLanguage.json');
  }
  if (words.length) console.log(`keywords: ${words.length - missing.length}/${words.length} of the grammar's keywords highlighted`);
}

(async () => {
  const update = process.argv.includes('--update');
  const grammar = await loadGrammar();
  checkGolden(grammar, update);
  if (!update) checkKeywords(grammar);
  if (failures) {
    console.error(`editor grammar test: ${failures} failure(s)`);
    process.exit(1);
  }
  console.log('editor grammar test: OK');
})().catch((e) => { console.error(e); process.exit(1); });

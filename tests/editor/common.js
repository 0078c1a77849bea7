// common.js - shared by the editor tests (grammar.test.js, extension.test.js):
// paths, a failure counter, the real TextMate engine (vscode-textmate with
// vscode-oniguruma, as VS Code runs it) loading editors/vscode's grammar, and
// the compiler's own lists that the editor must follow (builtins, keyword
// arguments), read from the compiler's source so a new builtin without
// editor support fails the test.
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..', '..');
const ext = path.join(root, 'editors', 'vscode');
const rel = (p) => path.relative(root, p);
const need = (name) => require(path.join(ext, 'node_modules', name));

let failures = 0;
const fail = (msg) => { failures++; console.error(`FAIL: ${msg}`); };
const failureCount = () => failures;

async function loadGrammar() {
  const vsctm = need('vscode-textmate');
  const oniguruma = need('vscode-oniguruma');
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

// Tokenizes text line by line as VS Code does. Returns { lines, endState }:
// per line, its tokens as { start, end, text, scopes } (scopes outermost
// first), and the rule stack after the last line.
function tokenize(grammar, text) {
  const vsctm = need('vscode-textmate');
  let state = vsctm.INITIAL;
  const lines = text.split('\n').map((line) => {
    const r = grammar.tokenizeLine(line, state);
    state = r.ruleStack;
    return r.tokens.map((t) => ({
      start: t.startIndex, end: t.endIndex, text: line.slice(t.startIndex, t.endIndex), scopes: t.scopes,
    }));
  });
  return { lines, endState: state, initial: vsctm.INITIAL };
}

const stripCppComments = (src) => src.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');

// The builtin functions, from the compiler's single list: compiler/ast/builtins.def
// (ETL_BUILTIN(Enum, "name", "what")) where it exists, otherwise the
// builtin_names() table of compiler/sema/check.cpp.
function compilerBuiltins() {
  const def = path.join(root, 'compiler', 'ast', 'builtins.def');
  if (fs.existsSync(def)) {
    const names = [...stripCppComments(fs.readFileSync(def, 'utf8')).matchAll(/ETL_BUILTIN\(\s*\w+\s*,\s*"(\w+)"/g)].map((m) => m[1]);
    return { names, from: rel(def) };
  }
  const check = path.join(root, 'compiler', 'sema', 'check.cpp');
  const src = fs.existsSync(check) ? fs.readFileSync(check, 'utf8') : '';
  const m = src.match(/builtin_names\(\)\s*\{[^}]*?names\s*=\s*\{([^}]*)\}/);
  const names = m ? [...m[1].matchAll(/"(\w+)"/g)].map((x) => x[1]) : [];
  return { names, from: `${rel(check)} builtin_names()` };
}

// The keyword-argument names sema accepts: every `kwarg(e, "NAME")` it reads
// and every name in an `arity(..., {"NAME", ...})` allow-list, over compiler/sema/*.cpp.
function compilerKeywordArgs() {
  const dir = path.join(root, 'compiler', 'sema');
  const names = new Set();
  for (const f of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    if (!f.endsWith('.cpp')) continue;
    const src = stripCppComments(fs.readFileSync(path.join(dir, f), 'utf8'));
    for (const m of src.matchAll(/\bkwarg\(\s*\w+\s*,\s*"(\w+)"\s*\)/g)) names.add(m[1]);
    for (const m of src.matchAll(/\barity\([^;{]*\{([^}]*)\}\s*\)/g)) {
      for (const s of m[1].matchAll(/"(\w+)"/g)) names.add(s[1]);
    }
  }
  return { names: [...names].sort(), from: `${rel(dir)}/*.cpp (kwarg(e, "..."), arity(..., {...}))` };
}

// The identifier-like literals of grammar/ETL.g4 ('kernel', 'dim', ...).
function grammarKeywords(g4File) {
  const src = stripCppComments(fs.readFileSync(g4File, 'utf8'));
  const words = new Set();
  for (const m of src.matchAll(/'((?:[^'\\]|\\.)*)'/g)) {
    if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(m[1])) words.add(m[1]);
  }
  return [...words].sort();
}

module.exports = {
  root, ext, rel, need, fail, failureCount, loadGrammar, tokenize,
  compilerBuiltins, compilerKeywordArgs, grammarKeywords,
};

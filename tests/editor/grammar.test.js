// grammar.test.js - colourisation test for the VS Code grammar
// (editors/vscode/syntaxes/etl.tmLanguage.json), run by the real TextMate
// engine (vscode-textmate + vscode-oniguruma):
// 1. golden: the (token, innermost scope) pairs of some lines of
//    examples/rowsum/rowsum.etl equal rowsum.golden. Regenerate after an
//    intended change with `node tests/editor/grammar.test.js --update` and
//    review the diff.
// 2. keywords: every keyword of grammar/ETL.g4 is highlighted.
// 3. builtins: the grammar's builtin list is exactly the compiler's
//    (compiler/ast/builtins.def, or check.cpp's builtin_names()), and each
//    builtin is coloured as one when called, plainly and with a type argument.
// 4. keyword arguments: each name sema accepts (axis, pad, mask, ...) is
//    coloured as a keyword argument inside a call.
// 5. corpus: every example, stdlib module and tests/golden program is
//    tokenized; an independent lexer (corpus.js) finds each keyword, builtin
//    call, keyword argument, kernel/task/fn name, dim, tensor parameter, task
//    index, fn parameter, event name and comment, and each must carry its scope.
// Run through tests/editor/run.sh, which installs the npm dependencies.
'use strict';
const fs = require('fs');
const path = require('path');
const c = require('./common');
const { classify, SCOPES } = require('./corpus');

const example = path.join(c.root, 'examples', 'rowsum', 'rowsum.etl');
const goldenFile = path.join(__dirname, 'rowsum.golden');
const g4File = process.env.ETL_GRAMMAR_G4 || path.join(c.root, 'grammar', 'ETL.g4');
const grammarFile = path.join(c.ext, 'syntaxes', 'etl.tmLanguage.json');
// 1-based line numbers of rowsum.etl whose tokens the golden file pins down.
const goldenLines = [1, 10, 13, 14, 15, 17, 18, 19, 23, 24, 25];

const innermost = (t) => t.scopes[t.scopes.length - 1];
// The tokens of a one-line snippet, blanks dropped.
const tokensOf = (grammar, line) => c.tokenize(grammar, line).lines[0].filter((t) => t.text.trim() !== '');
const scopeOf = (grammar, line, word) => {
  const t = tokensOf(grammar, line).find((x) => x.text === word);
  return t ? innermost(t) : `(no token '${word}'; tokens: ${tokensOf(grammar, line).map((x) => x.text).join(' ')})`;
};

function checkGolden(grammar, update) {
  const { lines } = c.tokenize(grammar, fs.readFileSync(example, 'utf8'));
  const actual = goldenLines.flatMap((n) => lines[n - 1].filter((t) => t.text.trim() !== '')
    .map((t) => `${n}\t${JSON.stringify(t.text.trim())}\t${innermost(t)}`));
  if (update) {
    const header = '# line<TAB>token (JSON)<TAB>innermost scope, for examples/rowsum/rowsum.etl\n' +
                   '# regenerate: node tests/editor/grammar.test.js --update\n';
    fs.writeFileSync(goldenFile, header + actual.join('\n') + '\n');
    console.log(`updated ${c.rel(goldenFile)} (${actual.length} tokens)`);
    return;
  }
  const expected = fs.readFileSync(goldenFile, 'utf8').split('\n').filter((l) => l !== '' && !l.startsWith('#'));
  let shown = 0;
  for (let i = 0; i < Math.max(expected.length, actual.length); i++) {
    if (expected[i] === actual[i]) continue;
    shown++;
    c.fail(`golden token ${i + 1}: expected ${expected[i] ?? '(none)'}, got ${actual[i] ?? '(none)'}`);
    if (shown === 10) break;
  }
  console.log(`golden: ${actual.length} tokens on ${goldenLines.length} lines of rowsum.etl` +
              (shown ? `, ${shown}+ differ (node tests/editor/grammar.test.js --update if intended)` : ', all match'));
}

function checkKeywords(grammar) {
  if (!fs.existsSync(g4File)) {
    c.fail(`${c.rel(g4File)} not found: cannot check the keyword list against the grammar`);
    return;
  }
  const words = c.grammarKeywords(g4File);
  if (words.length < 10) c.fail(`only ${words.length} keywords found in ${c.rel(g4File)}: did its format change?`);
  const missing = words.filter((w) => !SCOPES.keyword.test(scopeOf(grammar, w, w)));
  for (const w of missing) {
    c.fail(`keyword '${w}' of ${c.rel(g4File)} is not highlighted as a keyword, type, builtin or constant ` +
           `(scope ${scopeOf(grammar, w, w)}): add it to ${c.rel(grammarFile)}`);
  }
  console.log(`keywords: ${words.length - missing.length}/${words.length} of the grammar's keywords highlighted`);
}

// The names in the `\b(a|b|...)` alternations of the grammar's rules that
// give support.function.builtin.etl.
function grammarBuiltinLists() {
  const lists = [];
  const walk = (node) => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!node || typeof node !== 'object') return;
    const gives = JSON.stringify(node.captures || {}).includes('support.function.builtin') || node.name === 'support.function.builtin.etl';
    if (gives && typeof node.match === 'string') {
      const m = node.match.match(/^\\b\(((?:\w+\|)*\w+)\)/);
      if (m) lists.push({ rule: node.comment || node.match.slice(0, 40), names: m[1].split('|') });
    }
    Object.values(node).forEach(walk);
  };
  walk(JSON.parse(fs.readFileSync(grammarFile, 'utf8')).repository);
  return lists;
}

function checkBuiltins(grammar) {
  const { names, from } = c.compilerBuiltins();
  if (names.length < 10) {
    c.fail(`only ${names.length} builtins found in ${from}: did its format change? (update tests/editor/common.js)`);
    return;
  }
  const lists = grammarBuiltinLists();
  const before = c.failureCount();
  if (lists.length === 0) c.fail(`no builtin rule (\\b(a|b|...) giving support.function.builtin.etl) in ${c.rel(grammarFile)}`);
  for (const { rule, names: listed } of lists) {
    for (const n of names.filter((x) => !listed.includes(x))) {
      c.fail(`builtin '${n}' (${from}) is missing from the rule "${rule}" of ${c.rel(grammarFile)}`);
    }
    for (const n of listed.filter((x) => !names.includes(x))) {
      c.fail(`'${n}' in the rule "${rule}" of ${c.rel(grammarFile)} is not a builtin of ${from}`);
    }
  }
  let ok = 0;
  for (const n of names) {
    const cases = [`let y = ${n}(x, 1);`, `let y = ${n} (x);`, `let y = ${n}<f32>[16](x);`, `let y = ${n}<i32>(x);`];
    const bad = cases.filter((line) => scopeOf(grammar, line, n) !== 'support.function.builtin.etl');
    for (const line of bad) c.fail(`builtin '${n}' in \`${line}\` has scope ${scopeOf(grammar, line, n)}, not support.function.builtin.etl`);
    if (!bad.length) ok++;
  }
  // A builtin's name as a plain variable or a user fn is not a builtin call.
  for (const [line, word] of [['let sum2 = sum;', 'sum'], ['let y = my_log(x);', 'my_log']]) {
    if (scopeOf(grammar, line, word) === 'support.function.builtin.etl') c.fail(`'${word}' in \`${line}\` is coloured as a builtin`);
  }
  const listsOk = c.failureCount() === before;
  console.log(`builtins: ${ok}/${names.length} of ${from} coloured as builtins; ` +
              `the grammar's ${lists.length} builtin lists ${listsOk ? 'equal' : 'differ from'} the compiler's`);
}

function checkKeywordArgs(grammar) {
  const { names, from } = c.compilerKeywordArgs();
  for (const want of ['axis', 'pad', 'mask']) {
    if (!names.includes(want)) c.fail(`keyword argument '${want}' not found in ${from}: did the compiler change?`);
  }
  let ok = 0;
  for (const n of names) {
    const cases = [`let s = sum(t, ${n} = 1);`, `store(y[i], load(x[i], ${n}=-inf));`, `f(a,\n${n} = 0)`];
    const bad = cases.filter((text) => {
      const toks = c.tokenize(grammar, text).lines.flat();
      const t = toks.find((x) => x.text === n);
      return !t || innermost(t) !== SCOPES.kwarg;
    });
    for (const text of bad) c.fail(`keyword argument '${n}' in \`${text}\` is not scoped ${SCOPES.kwarg}`);
    if (!bad.length) ok++;
  }
  // `==` inside a call and a statement's `=` are not keyword arguments.
  for (const [line, word] of [['let b = select(a == 1, x, y);', 'a'], ['acc = max(acc, axis = 0);', 'acc']]) {
    if (scopeOf(grammar, line, word) === SCOPES.kwarg) c.fail(`'${word}' in \`${line}\` is coloured as a keyword argument`);
  }
  console.log(`keyword arguments: ${ok}/${names.length} of ${from} coloured`);
}

function corpusFiles() {
  const files = [];
  const add = (dir, depth) => {
    if (!fs.existsSync(dir)) return;
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory() && depth > 0) add(p, depth - 1);
      else if (e.isFile() && e.name.endsWith('.etl')) files.push(p);
    }
  };
  add(path.join(c.root, 'examples'), 1);
  add(path.join(c.root, 'stdlib'), 2);
  add(path.join(c.root, 'tests', 'golden'), 0);
  return files.sort();
}

function checkCorpus(grammar) {
  const sets = { keywords: c.grammarKeywords(g4File), builtins: c.compilerBuiltins().names };
  const files = corpusFiles();
  const counts = {};
  let shown = 0;
  for (const file of files) {
    const text = fs.readFileSync(file, 'utf8');
    const { lines, endState, initial } = c.tokenize(grammar, text);
    if (endState.depth !== undefined && endState.depth !== initial.depth) {
      c.fail(`${c.rel(file)}: the grammar ends the file inside a region (rule stack depth ${endState.depth}): a begin/end rule did not close`);
    }
    for (const want of classify(text, sets)) {
      counts[want.kind] = (counts[want.kind] || 0) + 1;
      const tok = lines[want.line].find((t) => t.start <= want.col && want.col < t.end);
      const got = tok ? (want.kind === 'comment' ? tok.scopes.join(' ') : innermost(tok)) : '(no token)';
      const exact = want.kind === 'comment' || (tok && tok.start === want.col && tok.end === want.col + want.text.length);
      const okScope = SCOPES[want.kind] instanceof RegExp ? SCOPES[want.kind].test(got) : got === SCOPES[want.kind];
      if (exact && okScope) continue;
      if (shown++ < 25) {
        c.fail(`${c.rel(file)}:${want.line + 1}:${want.col + 1}: ${want.kind} '${want.text}' has ` +
               `${exact ? 'scope' : 'token'} ${exact ? got : JSON.stringify(tok && tok.text)}, expected ${SCOPES[want.kind]}`);
      }
    }
  }
  if (shown > 25) c.fail(`... and ${shown - 25} more corpus mismatches`);
  const summary = Object.entries(counts).map(([k, n]) => `${n} ${k}`).join(', ');
  console.log(`corpus: ${files.length} files (examples, stdlib, tests/golden): ${summary}` +
              (shown ? `; ${shown} wrong` : '; all scoped as expected'));
  if (files.length < 10) c.fail(`only ${files.length} .etl files found for the corpus check`);
}

(async () => {
  const update = process.argv.includes('--update');
  const grammar = await c.loadGrammar();
  checkGolden(grammar, update);
  if (!update) {
    checkKeywords(grammar);
    checkBuiltins(grammar);
    checkKeywordArgs(grammar);
    checkCorpus(grammar);
  }
  if (c.failureCount()) {
    console.error(`editor grammar test: ${c.failureCount()} failure(s)`);
    process.exit(1);
  }
  console.log('editor grammar test: OK');
})().catch((e) => { console.error(e); process.exit(1); });

// corpus.js - an independent reading of ETL source for grammar.test.js: a
// small lexer (after grammar/ETL.g4's lexer rules) and a walk over its tokens
// (after the parser rules) that lists, with positions, the words the editor
// grammar must scope and the scope each must get. It shares no code or
// regular expression with editors/vscode/syntaxes/etl.tmLanguage.json.
'use strict';

// Expected innermost scope per kind (a RegExp where a family is fine).
const SCOPES = {
  keyword: /^(keyword|storage|support|constant\.language)\./,
  builtin: 'support.function.builtin.etl',
  kwarg: 'variable.parameter.keyword-argument.etl',
  name: /^entity\.name\.function(\.kernel|\.task)?\.etl$/,
  dim: 'variable.parameter.dim.etl',
  param: 'variable.parameter.tensor.etl',
  index: 'variable.parameter.index.etl',
  fnparam: 'variable.parameter.etl',
  event: 'variable.other.constant.event.etl',
  comment: /(^| )comment\.(line|block)/,
};

const OPS = ['..', '==', '!=', '<=', '>=', '&&', '||', '+=', '-=', '*=', '/='];

// Tokens { t: 'id'|'num'|'op', text, line, col } and comment expectations.
function lex(text) {
  const toks = [];
  const comments = [];
  let line = 0;
  let col = 0;
  let i = 0;
  const advance = (n) => {
    for (let k = 0; k < n; k++, i++) {
      if (text[i] === '\n') { line++; col = 0; } else col++;
    }
  };
  // A comment's text from here for n characters: expect its first and last
  // non-blank character on each line to be inside a comment scope.
  const comment = (n) => {
    const end = i + n;
    while (i < end) {
      const nl = text.indexOf('\n', i);
      const stop = nl < 0 || nl > end ? end : nl;
      const seg = text.slice(i, stop);
      const first = seg.search(/\S/);
      if (first >= 0) {
        const last = seg.length - 1 - seg.split('').reverse().join('').search(/\S/);
        comments.push({ kind: 'comment', line, col: col + first, text: seg[first] });
        comments.push({ kind: 'comment', line, col: col + last, text: seg[last] });
      }
      advance(stop - i);
      if (i < end) advance(1);
    }
  };
  while (i < text.length) {
    const rest = text.slice(i, i + 2);
    if (/\s/.test(text[i])) { advance(1); continue; }
    if (rest === '//') { const nl = text.indexOf('\n', i); comment((nl < 0 ? text.length : nl) - i); continue; }
    if (rest === '/*') { const e = text.indexOf('*/', i + 2); comment((e < 0 ? text.length : e + 2) - i); continue; }
    const m = /^[A-Za-z_][A-Za-z0-9_]*|^[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(i, i + 200));
    if (m) {
      toks.push({ t: /^[0-9]/.test(m[0]) ? 'num' : 'id', text: m[0], line, col });
      advance(m[0].length);
      continue;
    }
    const op = OPS.includes(rest) ? rest : text[i];
    toks.push({ t: 'op', text: op, line, col });
    advance(op.length);
  }
  return { toks, comments };
}

// Lists { kind, line, col, text } (0-based) for the words of `text`; sets:
// { keywords, builtins } (arrays of names).
function classify(text, sets) {
  const keywords = new Set(sets.keywords);
  const builtins = new Set(sets.builtins);
  const { toks, comments } = lex(text);
  const out = [...comments];
  const want = (kind, tok) => out.push({ kind, line: tok.line, col: tok.col, text: tok.text });
  const is = (k, s) => toks[k] && toks[k].text === s;
  const isId = (k) => toks[k] && toks[k].t === 'id';

  const stack = []; // open brackets: { ch, role }
  let header = null; // 'kernel' | 'task' while in a header, up to its `{`
  let events = false; // after waits/notifies, at the header's depth
  for (let k = 0; k < toks.length; k++) {
    const tok = toks[k];
    const top = stack[stack.length - 1];
    if (tok.t === 'op') {
      if ('([<'.includes(tok.text)) {
        let role = null;
        if (tok.text === '<' && header === 'kernel' && is(k - 2, 'kernel')) role = 'dims';
        if (tok.text === '(' && header === 'kernel' && stack.length === 0) role = 'params';
        if (tok.text === '[' && header === 'task' && is(k - 2, 'task')) role = 'domain';
        if (tok.text === '(' && is(k - 2, 'fn')) role = 'fnparams';
        if (tok.text !== '<' || role) stack.push({ ch: tok.text, role });
      } else if (')]'.includes(tok.text) || (tok.text === '>' && top && top.ch === '<')) {
        stack.pop();
      } else if (tok.text === '{') {
        header = null;
        events = false;
      }
      continue;
    }
    if (tok.t !== 'id') continue;
    const w = tok.text;
    if (keywords.has(w)) {
      want('keyword', tok);
      if (w === 'kernel' || w === 'task') header = w;
      if (w === 'waits' || w === 'notifies') events = true;
      if (w === 'schedule') events = false;
      continue;
    }
    if (is(k - 1, 'kernel') || is(k - 1, 'task') || is(k - 1, 'fn')) { want('name', tok); continue; }
    if (is(k - 1, 'event')) { want('event', tok); continue; }
    if (top && top.role === 'dims' && is(k + 1, ':')) { want('dim', tok); continue; }
    if (top && top.role === 'params' && stack.length === 1 && is(k + 1, ':')) { want('param', tok); continue; }
    if (top && top.role === 'domain' && stack.length === 1 && is(k + 1, 'in')) { want('index', tok); continue; }
    if (top && top.role === 'fnparams') { want('fnparam', tok); continue; }
    if (events && stack.length === 0 && is(k + 1, '[')) { want('event', tok); continue; }
    const generic = is(k + 1, '<') && isId(k + 2) && is(k + 3, '>') && (is(k + 4, '[') || is(k + 4, '('));
    if (builtins.has(w) && (is(k + 1, '(') || generic)) { want('builtin', tok); continue; }
    if (top && top.ch === '(' && is(k + 1, '=')) { want('kwarg', tok); continue; }
  }
  return out;
}

module.exports = { classify, lex, SCOPES };

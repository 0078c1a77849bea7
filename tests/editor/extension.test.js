// extension.test.js - the VS Code extension beyond colouring (editors/vscode):
// 1. manifest: every contributed file exists; the `etlc` problem matcher,
//    task type, snippets and activation events are declared.
// 2. snippets: kernel/task/event/fn expand (placeholders to their defaults),
//    tokenize with every region closed, and composed into programs they
//    compile with etlc without an error.
// 3. task provider: extension.js, loaded against a recording stand-in for
//    the `vscode` module (VS Code itself cannot run here), provides and
//    resolves `etlc` tasks with the etlc command line and `$etlc` matcher.
//    language client: activate() starts a LanguageClient (a recording
//    stand-in for vscode-languageclient/node, which must be installed) on
//    `<etl.etlcPath> lsp` for etl documents with etl.importPaths, none when
//    etl.languageServer.enable is false; that command line, run with the
//    real etlc, answers initialize with hover, definition and completion and
//    exits 0 after shutdown and exit.
// 4. problem matcher: the task's command line runs the real etlc on
//    tests/diag files; the matcher's regexp (from package.json, applied as VS
//    Code does, line by line) must find exactly the diagnostics the file's
//    `// CHECK:` lines expect, with severity, file, line and column.
// 5. package: `vsce package` builds the .vsix offline; its file list is
//    checked: the language client ships (node_modules/vscode-languageclient),
//    the dev dependencies (vsce, vscode-textmate, ...) do not.
// etlc: $ETLC, else build/compiler/etlc; parts 2 (compiling) and 4 print why
// they are skipped when it is missing. Run through tests/editor/run.sh.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const Module = require('module');
const { spawnSync } = require('child_process');
const c = require('./common');

const manifest = JSON.parse(fs.readFileSync(path.join(c.ext, 'package.json'), 'utf8'));
const contributes = manifest.contributes || {};
const etlc = process.env.ETLC || path.join(c.root, 'build', 'compiler', 'etlc');
const haveEtlc = fs.existsSync(etlc);
const skipped = [];

function checkManifest() {
  const files = [manifest.main, ...(contributes.grammars || []).map((g) => g.path),
    ...(contributes.snippets || []).map((s) => s.path), ...(contributes.languages || []).map((l) => l.configuration)];
  for (const f of files) {
    if (!f || !fs.existsSync(path.join(c.ext, f))) c.fail(`package.json names ${f}, which is not in ${c.rel(c.ext)}`);
  }
  const pm = (contributes.problemMatchers || []).find((m) => m.name === 'etlc');
  if (!pm) c.fail('package.json contributes no problem matcher named "etlc"');
  if (!(contributes.taskDefinitions || []).some((t) => t.type === 'etlc')) c.fail('package.json declares no "etlc" task type');
  if (!(manifest.activationEvents || []).includes('onTaskType:etlc')) c.fail('activationEvents lacks onTaskType:etlc');
  console.log(`manifest: ${files.length} contributed files present; problem matcher, task type and activation declared`);
  return pm;
}

// Expands a VS Code snippet body: choices to their first option, placeholders
// to their defaults (or overrides[n]), mirrors ($n) to the same text, and $0
// to `zero`. Returns the text.
function expand(body, overrides = {}, zero = '') {
  let s = Array.isArray(body) ? body.join('\n') : body;
  const value = {};
  for (let pass = 0; pass < 10; pass++) {
    const before = s;
    s = s.replace(/\$\{(\d+)\|([^|]*)\|\}/g, (_, n, opts) => (value[n] = overrides[n] ?? opts.split(',')[0]));
    s = s.replace(/\$\{(\d+):([^${}]*)\}/g, (_, n, d) => (value[n] = value[n] ?? overrides[n] ?? d));
    s = s.replace(/\$([1-9]\d*)|\$\{([1-9]\d*)\}/g, (m, a, b) => ((a || b) in value ? value[a || b] : m));
    if (s === before) break;
  }
  s = s.replace(/\$0(?!\d)|\$\{0\}/g, zero);
  if (/\$\{?\d/.test(s)) c.fail(`snippet expansion left a placeholder: ${s}`);
  return s;
}

function compile(file) {
  const r = spawnSync(etlc, ['compile', file, '--emit=taskgraph'], { cwd: c.root, encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout || ''}${r.stderr || ''}` };
}

async function checkSnippets() {
  const snipFile = path.join(c.ext, (contributes.snippets || [{}])[0].path || 'snippets/etl.json');
  const snippets = Object.values(JSON.parse(fs.readFileSync(snipFile, 'utf8')));
  const byPrefix = Object.fromEntries(snippets.map((s) => [s.prefix, s]));
  for (const p of ['kernel', 'task', 'event', 'fn']) {
    if (!byPrefix[p]) c.fail(`no snippet with prefix '${p}' in ${c.rel(snipFile)}`);
  }
  if (!['kernel', 'task', 'event', 'fn', 'taskev'].every((p) => byPrefix[p])) return;
  const body = 'let t = load(x[i * 16 .. +16]);\n\t\tstore(y[i * 16 .. +16], my_fn(t));';
  const ind = (s) => s.replace(/\n/g, '\n\t');
  const fn = expand(byPrefix.fn.body);
  const event = expand(byPrefix.event.body);
  const producer = expand(byPrefix.taskev.body, { 1: 'producer' }, body);
  const consumer = expand(byPrefix.taskev.body, { 1: 'consumer', 4: 'waits' }, body);
  const plain = expand(byPrefix.task.body, {}, body);
  const programs = {
    'kernel, event, task waits/notifies, fn': `${fn}\n\n${expand(byPrefix.kernel.body, {}, ind([event, producer, consumer].join('\n')))}\n`,
    'kernel, task, fn': `${fn}\n\n${expand(byPrefix.kernel.body, {}, ind(plain))}\n`,
  };
  const grammar = await c.loadGrammar();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'etl-snippets-'));
  try {
    for (const [what, text] of Object.entries(programs)) {
      const { endState, initial } = c.tokenize(grammar, text);
      if (endState.depth !== initial.depth) c.fail(`snippets (${what}): the grammar leaves a region open:\n${text}`);
      if (!haveEtlc) continue;
      const file = path.join(dir, 'snippets.etl');
      fs.writeFileSync(file, text);
      const r = compile(file);
      if (r.status !== 0 || /: error: /.test(r.out)) c.fail(`snippets (${what}) do not compile (etlc exit ${r.status}):\n${text}\n${r.out}`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  if (!haveEtlc) skipped.push(`compiling the expanded snippets: no etlc at ${etlc} (build it, or set ETLC)`);
  console.log(`snippets: ${snippets.length} (${Object.keys(byPrefix).join(', ')}); ` +
              `${Object.keys(programs).length} composed programs tokenize${haveEtlc ? ' and compile' : ''}`);
}

// A recording stand-in for the parts of the `vscode` API extension.js uses.
function fakeVscode(config) {
  const providers = {};
  class Task { constructor(definition, scope, name, source, execution, problemMatchers) { Object.assign(this, { definition, scope, name, source, execution, problemMatchers }); } }
  class ShellExecution { constructor(command, args) { Object.assign(this, { command, args }); } }
  return {
    providers,
    api: {
      Task, ShellExecution,
      TaskScope: { Workspace: 'workspace' },
      TaskGroup: { Build: 'build' },
      TaskRevealKind: { Silent: 'silent' },
      workspace: { getConfiguration: (section) => ({ get: (key, dflt) => config[`${section}.${key}`] ?? dflt }) },
      tasks: { registerTaskProvider: (type, p) => { providers[type] = p; return { dispose() {} }; } },
    },
  };
}

// A recording stand-in for vscode-languageclient/node's LanguageClient.
function fakeLanguageClient() {
  const clients = [];
  class LanguageClient {
    constructor(id, name, serverOptions, clientOptions) {
      Object.assign(this, { id, name, serverOptions, clientOptions, started: false, stopped: false });
      clients.push(this);
    }
    start() { this.started = true; return Promise.resolve(); }
    stop() { this.stopped = true; return Promise.resolve(); }
  }
  return { clients, api: { LanguageClient } };
}

const LC = 'vscode-languageclient/node';

// Loads extension.js with `vscode` and vscode-languageclient/node resolving
// to the stand-ins given, which stay in place (activate() requires the
// client lazily) until the next load.
function loadExtension(fake, lc = fakeLanguageClient()) {
  if (!loadExtension.hooked) {
    const resolve = Module._resolveFilename;
    Module._resolveFilename = function (request, ...rest) {
      return request === 'vscode' || request === LC ? request : resolve.call(this, request, ...rest);
    };
    loadExtension.hooked = true;
  }
  require.cache.vscode = { id: 'vscode', filename: 'vscode', loaded: true, exports: fake.api };
  require.cache[LC] = { id: LC, filename: LC, loaded: true, exports: lc.api };
  const file = path.join(c.ext, manifest.main);
  delete require.cache[require.resolve(file)];
  return require(file);
}

// Returns the command line of the provided "check current file" task.
function checkTaskProvider() {
  const fake = fakeVscode({ 'etl.etlcPath': '/opt/etl/bin/etlc' });
  const context = { subscriptions: [] };
  loadExtension(fake).activate(context);
  const provider = fake.providers.etlc;
  if (!provider) {
    c.fail('extension.js did not register one task provider for type "etlc"');
    return null;
  }
  const tasks = provider.provideTasks();
  const t = tasks && tasks[0];
  const want = ['/opt/etl/bin/etlc', ['compile', '${file}', '--emit=taskgraph', '--color=never']];
  if (!t || JSON.stringify([t.execution.command, t.execution.args]) !== JSON.stringify(want)) {
    c.fail(`provided task runs ${t && JSON.stringify([t.execution.command, t.execution.args])}, expected ${JSON.stringify(want)}`);
  }
  if (!t || JSON.stringify(t.problemMatchers) !== '["$etlc"]') c.fail('provided task does not use the $etlc problem matcher');
  const resolved = provider.resolveTask({ definition: { type: 'etlc', file: 'a.etl', emit: 'ast', args: ['-I', 'lib'] }, scope: 'folder' });
  const wantResolved = ['compile', 'a.etl', '--emit=ast', '--color=never', '-I', 'lib'];
  if (!resolved || JSON.stringify(resolved.execution.args) !== JSON.stringify(wantResolved) || resolved.scope !== 'folder') {
    c.fail(`resolved tasks.json task runs ${resolved && JSON.stringify(resolved.execution.args)}, expected ${JSON.stringify(wantResolved)}`);
  }
  if (provider.resolveTask({ definition: { type: 'shell' } }) !== undefined) c.fail('resolveTask accepted a task of another type');
  console.log('task provider: provides "check current file" and resolves tasks.json etlc tasks');
  return t ? t.execution.args : null;
}

// One framed LSP message to `etlc lsp`'s input.
function frame(obj) {
  const body = JSON.stringify({ jsonrpc: '2.0', ...obj });
  return `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

function checkLanguageClient() {
  if (!fs.existsSync(path.join(c.ext, 'node_modules', `${LC}.js`))) {
    c.fail(`${LC} is not installed in ${c.rel(c.ext)}/node_modules (npm ci)`);
  }
  const fake = fakeVscode({ 'etl.etlcPath': '/opt/etl/bin/etlc', 'etl.importPaths': ['lib'] });
  const lc = fakeLanguageClient();
  const ext = loadExtension(fake, lc);
  const context = { subscriptions: [] };
  ext.activate(context);
  const client = lc.clients[0];
  if (lc.clients.length !== 1 || !client.started) {
    c.fail(`activate started ${lc.clients.length} language clients, expected one, started`);
    return;
  }
  const run = client.serverOptions.run || client.serverOptions;
  if (run.command !== '/opt/etl/bin/etlc' || JSON.stringify(run.args) !== '["lsp"]') {
    c.fail(`the language client runs ${JSON.stringify([run.command, run.args])}, expected ["/opt/etl/bin/etlc",["lsp"]]`);
  }
  if (!client.clientOptions.documentSelector.some((d) => d.language === 'etl')) c.fail('the language client is not for etl documents');
  if (JSON.stringify(client.clientOptions.initializationOptions) !== '{"includePaths":["lib"]}') {
    c.fail(`initializationOptions ${JSON.stringify(client.clientOptions.initializationOptions)} lack etl.importPaths`);
  }
  ext.deactivate();
  if (!client.stopped) c.fail('deactivate did not stop the language client');
  const off = fakeLanguageClient();
  loadExtension(fakeVscode({ 'etl.languageServer.enable': false }), off).activate({ subscriptions: [] });
  if (off.clients.length !== 0) c.fail('etl.languageServer.enable = false still started a language client');
  if (!haveEtlc) {
    skipped.push(`starting the language server: no etlc at ${etlc} (build it, or set ETLC)`);
    return;
  }
  // The client's command line with the real etlc: initialize, shutdown, exit.
  const input = frame({ id: 1, method: 'initialize', params: { processId: null, capabilities: {}, rootUri: null,
    initializationOptions: client.clientOptions.initializationOptions } }) +
    frame({ method: 'initialized', params: {} }) + frame({ id: 2, method: 'shutdown' }) + frame({ method: 'exit' });
  const r = spawnSync(etlc, run.args, { input, encoding: 'utf8', timeout: 30000 });
  const m = /Content-Length: (\d+)\r\n\r\n/.exec(r.stdout || '');
  let caps = null;
  try {
    caps = m && JSON.parse(r.stdout.substr(m.index + m[0].length, +m[1])).result.capabilities;
  } catch (e) {
    caps = null;
  }
  if (r.status !== 0 || !caps || !caps.hoverProvider || !caps.definitionProvider || !caps.completionProvider) {
    c.fail(`etlc lsp (exit ${r.status}) did not answer initialize with hover, definition and completion:\n${r.stdout}${r.stderr}`);
  }
  console.log('language client: starts `etlc lsp` for etl documents with etl.importPaths; etlc lsp answers initialize and exits 0');
}

// Applies a VS Code problem matcher pattern to output, line by line.
function matchProblems(pm, output) {
  const p = pm.pattern;
  const re = new RegExp(p.regexp);
  return output.split(/\r?\n/).flatMap((line) => {
    const m = re.exec(line);
    return m ? [{ file: m[p.file], line: +m[p.line], column: +m[p.column], severity: m[p.severity], message: m[p.message] }] : [];
  });
}

function checkProblemMatcher(pm, args) {
  if (!pm || !args) return;
  if (!haveEtlc) {
    skipped.push(`the problem matcher against etlc's output: no etlc at ${etlc} (build it, or set ETLC)`);
    return;
  }
  const diag = path.join(c.root, 'tests', 'diag');
  const files = ['fail_axis.etl', 'warn_never_awaited.etl', 'fail_fn_note_order.etl', 'fail_import_duplicate_name.etl', 'fail_syntax_missing_semicolon.etl', 'fail_syntax_several_errors.etl']
    .filter((f) => fs.existsSync(path.join(diag, f)));
  let n = 0;
  for (const f of files) {
    const abs = path.join(diag, f);
    // The task's command line with ${file} substituted, run from the workspace root.
    const argv = args.map((a) => a.replace('${file}', abs));
    const r = spawnSync(etlc, argv, { cwd: c.root, encoding: 'utf8' });
    const output = `${r.stdout || ''}${r.stderr || ''}`;
    const expected = fs.readFileSync(abs, 'utf8').split('\n')
      .map((l) => l.match(/^\/\/ CHECK: (\S.*)$/)).filter(Boolean).map((m) => m[1])
      .filter((l) => /^[^ ].*:\d+:\d+: /.test(l));
    const found = matchProblems(pm, output);
    // etlc prints the file as given (here absolute) and stdlib modules
    // relative to its own source tree, or absolute when that is another
    // checkout: compare the CHECK lines' spellings.
    const norm = (s) => s.split(abs).join(f).replace(/\/[^\s':]*\/(stdlib\/)/g, '$1');
    const shown = found.map((d) => norm(`${d.file}:${d.line}:${d.column}: ${d.severity}: ${d.message}`));
    if (JSON.stringify(shown) !== JSON.stringify(expected)) {
      c.fail(`${c.rel(abs)}: the problem matcher found\n  ${shown.join('\n  ')}\nexpected (its CHECK lines)\n  ${expected.join('\n  ')}\netlc printed:\n${output}`);
    }
    // fileLocation autoDetect: absolute, or relative to the workspace folder.
    for (const d of found) {
      if (!fs.existsSync(path.isAbsolute(d.file) ? d.file : path.join(c.root, d.file))) c.fail(`problem matcher file '${d.file}' does not resolve`);
    }
    n += found.length;
  }
  if (files.length < 6) c.fail(`only ${files.length} of the tests/diag files used by the problem matcher check exist`);
  console.log(`problem matcher: ${n} diagnostics (error, warning, note; main file and stdlib) from ${files.length} tests/diag files matched`);
}

async function checkPackage() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'etl-vsix-'));
  try {
    const out = path.join(dir, 'etl.vsix');
    const vsce = path.join(c.ext, 'node_modules', '.bin', 'vsce');
    const r = spawnSync(vsce, ['package', '--skip-license', '--allow-missing-repository', '--out', out], { cwd: c.ext, encoding: 'utf8' });
    if (r.status !== 0 || !fs.existsSync(out)) {
      c.fail(`vsce package failed (exit ${r.status}):\n${r.stdout}${r.stderr}`);
      return;
    }
    const entries = await new Promise((resolve, reject) => {
      c.need('yauzl').open(out, { lazyEntries: true }, (err, zip) => {
        if (err) return reject(err);
        const names = [];
        zip.on('entry', (e) => { names.push(e.fileName); zip.readEntry(); });
        zip.on('end', () => resolve(names));
        zip.readEntry();
      });
    });
    const want = ['extension/package.json', `extension/${path.normalize(manifest.main)}`, 'extension/syntaxes/etl.tmLanguage.json',
      'extension/snippets/etl.json', 'extension/language-configuration.json'];
    for (const w of want.filter((x) => !entries.includes(x))) c.fail(`the .vsix lacks ${w} (it has ${entries.join(', ')})`);
    if (!entries.includes('extension/node_modules/vscode-languageclient/package.json')) {
      c.fail('the .vsix lacks the language client (extension/node_modules/vscode-languageclient)');
    }
    const dev = /node_modules\/(@vscode\/vsce|vscode-textmate|vscode-oniguruma)\//;
    for (const e of entries.filter((x) => dev.test(x) || x.endsWith('.vsix'))) c.fail(`the .vsix contains ${e}`);
    console.log(`package: vsce built a .vsix of ${entries.length} files (${(fs.statSync(out).size / 1024).toFixed(1)} KiB)`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

(async () => {
  const pm = checkManifest();
  await checkSnippets();
  checkProblemMatcher(pm, checkTaskProvider());
  checkLanguageClient();
  if (!process.argv.includes('--no-package')) await checkPackage();
  for (const s of skipped) console.log(`SKIPPED: ${s}`);
  if (c.failureCount()) {
    console.error(`editor extension test: ${c.failureCount()} failure(s)`);
    process.exit(1);
  }
  console.log('editor extension test: OK');
})().catch((e) => { console.error(e); process.exit(1); });

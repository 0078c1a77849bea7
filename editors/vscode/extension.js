// extension.js - the ETL extension's only code:
// 1. the language client: starts `etlc lsp` (the compiler's language server,
//    compiler/lsp) over stdio through vscode-languageclient for .etl files,
//    so diagnostics show as you type and hover, go to definition and
//    completion work. `etl.etlcPath` names the etlc, `etl.importPaths` are
//    passed as the server's import directories (initializationOptions
//    .includePaths), `etl.languageServer.enable` turns it off.
// 2. a task provider for the `etlc` task type (declared in package.json
//    `taskDefinitions`). It offers "etlc: check FILE", which runs `etlc
//    compile FILE --emit=taskgraph --color=never` (parse, sema and task-graph
//    analysis, no code generation, nothing written; no colour though the
//    task's terminal is one) with the `$etlc` problem matcher, so etlc's
//    diagnostics show in the editor. Tasks written in tasks.json with
//    `"type": "etlc"` are resolved the same way.
// Colouring and snippets are declarative (syntaxes/, snippets/).
'use strict';
const vscode = require('vscode');

const TYPE = 'etlc';
let client = null;

// The etlc command line for a task definition: { file, emit, args }.
function commandLine(definition, etlcPath) {
  const file = definition.file || '${file}';
  const emit = definition.emit || 'taskgraph';
  return [etlcPath || 'etlc', ['compile', file, `--emit=${emit}`, '--color=never', ...(definition.args || [])]];
}

function makeTask(definition, scope) {
  const etlcPath = vscode.workspace.getConfiguration('etl').get('etlcPath', 'etlc');
  const [command, args] = commandLine(definition, etlcPath);
  const name = `check ${definition.file || 'current file'}`;
  const task = new vscode.Task(definition, scope || vscode.TaskScope.Workspace, name, TYPE,
                               new vscode.ShellExecution(command, args), ['$etlc']);
  task.group = vscode.TaskGroup.Build;
  task.presentationOptions = { reveal: vscode.TaskRevealKind.Silent, clear: true };
  return task;
}

// The language client's server and client options from the `etl` settings.
function languageServerOptions(config) {
  const server = { command: config.get('etlcPath', 'etlc') || 'etlc', args: ['lsp'] };
  return {
    serverOptions: { run: server, debug: server },
    clientOptions: {
      documentSelector: [{ scheme: 'file', language: 'etl' }, { scheme: 'untitled', language: 'etl' }],
      initializationOptions: { includePaths: config.get('importPaths', []) },
    },
  };
}

function startLanguageClient(context) {
  const config = vscode.workspace.getConfiguration('etl');
  if (!config.get('languageServer.enable', true)) return;
  const { LanguageClient } = require('vscode-languageclient/node');
  const { serverOptions, clientOptions } = languageServerOptions(config);
  client = new LanguageClient('etl', 'ETL language server (etlc lsp)', serverOptions, clientOptions);
  context.subscriptions.push({ dispose: () => (client ? client.stop() : undefined) });
  return client.start();
}

function activate(context) {
  context.subscriptions.push(vscode.tasks.registerTaskProvider(TYPE, {
    provideTasks: () => [makeTask({ type: TYPE })],
    resolveTask: (task) => (task.definition.type === TYPE ? makeTask(task.definition, task.scope) : undefined),
  }));
  return startLanguageClient(context);
}

function deactivate() {
  const c = client;
  client = null;
  return c ? c.stop() : undefined;
}

module.exports = { activate, deactivate, commandLine, languageServerOptions };

// extension.js - the ETL extension's only code: a task provider for the `etlc`
// task type (declared in package.json `taskDefinitions`). It offers "etlc:
// check FILE", which runs `etlc compile FILE --emit=taskgraph --color=never`
// (parse, sema and task-graph analysis, no code generation, nothing written;
// no colour though the task's terminal is one) with the `$etlc` problem
// matcher, so etlc's diagnostics show in the editor. Tasks
// written in tasks.json with `"type": "etlc"` are resolved the same way.
// Colouring and snippets are declarative (syntaxes/, snippets/).
'use strict';
const vscode = require('vscode');

const TYPE = 'etlc';

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

function activate(context) {
  context.subscriptions.push(vscode.tasks.registerTaskProvider(TYPE, {
    provideTasks: () => [makeTask({ type: TYPE })],
    resolveTask: (task) => (task.definition.type === TYPE ? makeTask(task.definition, task.scope) : undefined),
  }));
}

function deactivate() {}

module.exports = { activate, deactivate, commandLine };

//===- lsp/server.cpp - JSON-RPC dispatch and the LSP methods -----------------===//
//
// One table of methods (kMethods): each a request (answered with a result
// or an error) or a notification (never answered). handle() takes a
// message through the protocol's checks in order: valid JSON (else
// ParseError), a JSON-RPC object (else InvalidRequest), the lifecycle
// (before `initialize` a request is ServerNotInitialized, after `shutdown`
// InvalidRequest), a known method (else MethodNotFound for a request; an
// unknown notification is dropped), parameters of the right shape (else
// InvalidParams). A handler that throws answers InternalError.
//
//===----------------------------------------------------------------------===//
#include "frontend/modules.h"
#include "lsp/analysis.h"
#include "lsp/lsp.h"
#include "lsp/text.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include <map>
#include <memory>

namespace etl {

namespace json = llvm::json;
using lsp::Analysis;

namespace {

// JSON-RPC and LSP error codes.
enum ErrorCode {
  ParseError = -32700,
  InvalidRequest = -32600,
  MethodNotFound = -32601,
  InvalidParams = -32602,
  InternalError = -32603,
  ServerNotInitialized = -32002,
};

struct RpcError {
  int code = 0;
  std::string message;
};

struct Document {
  std::string path, text;
  int64_t version = 0;
  std::unique_ptr<Analysis> analysis;
};

} // namespace

struct LspServer::State {
  LspOptions opts;
  lsp::SearchPath search;
  bool initialized = false, shut_down = false, exited = false;
  std::map<std::string, Document> docs;
  std::vector<std::string> out; ///< messages to send
};

namespace {

using State = LspServer::State;
/// A method: its result (requests), or null; sets `err` to fail.
using Handler = json::Value (*)(State &s, const json::Object &params, RpcError &err);

struct Method {
  const char *name;
  bool request;
  Handler handler;
};

json::Value fail(RpcError &err, int code, std::string message) {
  err = {code, std::move(message)};
  return nullptr;
}

std::string to_text(json::Value v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << v;
  return os.str();
}

void notify(State &s, const char *method, json::Object params) {
  s.out.push_back(to_text(
      json::Object{{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}}));
}

void publish(State &s, const std::string &uri, const Document *d) {
  json::Object p{{"uri", uri}, {"diagnostics", d ? d->analysis->diagnostics : json::Array()}};
  if (d)
    p["version"] = d->version;
  notify(s, "textDocument/publishDiagnostics", std::move(p));
}

void reanalyse(State &s, const std::string &uri) {
  Document &d = s.docs[uri];
  d.analysis = std::make_unique<Analysis>(lsp::analyse(d.path, d.text, s.search));
  publish(s, uri, &d);
}

bool is_dir(const std::string &p) { return llvm::sys::fs::is_directory(p); }

// ---- lifecycle ----

json::Value initialize(State &s, const json::Object &params, RpcError &err) {
  if (s.initialized)
    return fail(err, InvalidRequest, "initialize: the server is already initialized");
  s.search.import_dirs = s.opts.import_dirs;
  s.search.stdlib_dir = default_stdlib_dir();
  if (const json::Object *o = params.getObject("initializationOptions"))
    if (const json::Array *dirs = o->getArray("includePaths"))
      for (const json::Value &d : *dirs)
        if (std::optional<llvm::StringRef> str = d.getAsString())
          s.search.import_dirs.push_back(str->str());
  // A workspace folder with a stdlib/ directory (this repository) takes
  // its stdlib from there.
  std::vector<std::string> roots;
  if (const json::Array *folders = params.getArray("workspaceFolders"))
    for (const json::Value &f : *folders)
      if (const json::Object *fo = f.getAsObject())
        if (std::optional<llvm::StringRef> uri = fo->getString("uri"))
          if (std::optional<std::string> p = lsp::uri_to_path(uri->str()))
            roots.push_back(*p);
  if (std::optional<llvm::StringRef> uri = params.getString("rootUri"))
    if (std::optional<std::string> p = lsp::uri_to_path(uri->str()))
      roots.push_back(*p);
  for (const std::string &r : roots)
    if (is_dir(r + "/stdlib")) {
      s.search.stdlib_dir = r + "/stdlib";
      break;
    }
  s.initialized = true;
  json::Object caps{
      {"textDocumentSync", json::Object{{"openClose", true}, {"change", 1}}},
      {"hoverProvider", true},
      {"definitionProvider", true},
      {"completionProvider",
       json::Object{{"triggerCharacters", json::Array{"(", ",", " "}}}},
  };
  return json::Object{{"capabilities", std::move(caps)},
                      {"serverInfo", json::Object{{"name", "etlc"}}}};
}

json::Value initialized(State &, const json::Object &, RpcError &) { return nullptr; }

json::Value shutdown(State &s, const json::Object &, RpcError &) {
  s.shut_down = true;
  return nullptr;
}

json::Value exit_method(State &s, const json::Object &, RpcError &) {
  s.exited = true;
  return nullptr;
}

// ---- documents ----

/// params.textDocument.uri, or "" with `err` set.
std::string doc_uri(const json::Object &params, RpcError &err) {
  const json::Object *td = params.getObject("textDocument");
  std::optional<llvm::StringRef> uri = td ? td->getString("uri") : std::nullopt;
  if (!uri) {
    fail(err, InvalidParams, "textDocument.uri is missing");
    return "";
  }
  return uri->str();
}

json::Value did_open(State &s, const json::Object &params, RpcError &err) {
  std::string uri = doc_uri(params, err);
  const json::Object *td = params.getObject("textDocument");
  std::optional<llvm::StringRef> text = td ? td->getString("text") : std::nullopt;
  if (uri.empty() || !text)
    return fail(err, InvalidParams, "didOpen: textDocument.uri and .text are needed");
  Document &d = s.docs[uri];
  d.path = lsp::uri_to_path(uri).value_or(uri);
  d.text = text->str();
  d.version = td->getInteger("version").value_or(0);
  reanalyse(s, uri);
  return nullptr;
}

/// Replaces the LSP range `r` of `text` by `with`; false if `r` is bad.
bool apply_edit(std::string &text, const json::Object &r, const std::string &with) {
  const json::Object *a = r.getObject("start"), *b = r.getObject("end");
  if (!a || !b)
    return false;
  auto at = [&](const json::Object *p) {
    return lsp::offset_of(text, p->getInteger("line").value_or(-1),
                          p->getInteger("character").value_or(-1));
  };
  std::optional<uint32_t> x = at(a), y = at(b);
  if (!x || !y || *y < *x)
    return false;
  text.replace(*x, *y - *x, with);
  return true;
}

json::Value did_change(State &s, const json::Object &params, RpcError &err) {
  std::string uri = doc_uri(params, err);
  if (uri.empty())
    return nullptr;
  auto it = s.docs.find(uri);
  if (it == s.docs.end())
    return fail(err, InvalidParams, "didChange: " + uri + " is not open");
  const json::Array *changes = params.getArray("contentChanges");
  if (!changes)
    return fail(err, InvalidParams, "didChange: contentChanges is missing");
  Document &d = it->second;
  for (const json::Value &c : *changes) {
    const json::Object *co = c.getAsObject();
    std::optional<llvm::StringRef> text = co ? co->getString("text") : std::nullopt;
    if (!text)
      return fail(err, InvalidParams, "didChange: a change without text");
    if (const json::Object *r = co->getObject("range")) {
      if (!apply_edit(d.text, *r, text->str()))
        return fail(err, InvalidParams, "didChange: a range outside the document");
    } else {
      d.text = text->str();
    }
  }
  if (const json::Object *td = params.getObject("textDocument"))
    d.version = td->getInteger("version").value_or(d.version);
  reanalyse(s, uri);
  return nullptr;
}

json::Value did_close(State &s, const json::Object &params, RpcError &err) {
  std::string uri = doc_uri(params, err);
  if (uri.empty())
    return nullptr;
  s.docs.erase(uri);
  publish(s, uri, nullptr);
  return nullptr;
}

json::Value ignore(State &, const json::Object &, RpcError &) { return nullptr; }

// ---- features ----

/// The open document and the byte offset of params.position; null with
/// `err` set when the document is not open; `offset` nullopt when the
/// position is not in the text.
const Document *doc_at(State &s, const json::Object &params, std::optional<uint32_t> &offset,
                       RpcError &err) {
  std::string uri = doc_uri(params, err);
  if (uri.empty())
    return nullptr;
  auto it = s.docs.find(uri);
  if (it == s.docs.end()) {
    fail(err, InvalidParams, uri + " is not open");
    return nullptr;
  }
  const json::Object *pos = params.getObject("position");
  if (!pos) {
    fail(err, InvalidParams, "position is missing");
    return nullptr;
  }
  offset = lsp::offset_of(it->second.text, pos->getInteger("line").value_or(-1),
                          pos->getInteger("character").value_or(-1));
  return &it->second;
}

json::Value hover(State &s, const json::Object &params, RpcError &err) {
  std::optional<uint32_t> off;
  const Document *d = doc_at(s, params, off, err);
  if (!d || !off)
    return nullptr;
  std::string text = lsp::hover_text(*d->analysis, *off);
  if (text.empty())
    return nullptr;
  json::Object r{{"contents", json::Object{{"kind", "markdown"}, {"value", text}}}};
  if (const lsp::Occurrence *o = d->analysis->at(*off)) {
    SourceRange range;
    range.begin.line = range.end.line = 1; // valid; only the offsets are read
    range.begin.offset = o->begin, range.end.offset = o->end;
    r["range"] = lsp::range_of(d->text, range);
  }
  return r;
}

json::Value definition(State &s, const json::Object &params, RpcError &err) {
  std::optional<uint32_t> off;
  const Document *d = doc_at(s, params, off, err);
  if (!d || !off)
    return nullptr;
  const lsp::Occurrence *o = d->analysis->at(*off);
  if (!o || o->symbol < 0)
    return nullptr;
  const lsp::Symbol &sym = d->analysis->symbols[size_t(o->symbol)];
  if (sym.path.empty())
    return nullptr;
  std::string uri = sym.path == d->path ? "" : lsp::path_to_uri(sym.path);
  if (uri.empty()) // the document itself: its own uri (an untitled one too)
    for (const auto &[u, doc] : s.docs)
      if (&doc == d)
        uri = u;
  return json::Object{{"uri", uri}, {"range", sym.range}};
}

json::Value completion(State &s, const json::Object &params, RpcError &err) {
  std::optional<uint32_t> off;
  const Document *d = doc_at(s, params, off, err);
  if (!d || !off)
    return json::Object{{"isIncomplete", false}, {"items", json::Array()}};
  return json::Object{{"isIncomplete", false}, {"items", lsp::completions(*d->analysis, *off)}};
}

/// Every method the server knows.
const Method kMethods[] = {
    {"initialize", true, initialize},
    {"initialized", false, initialized},
    {"shutdown", true, shutdown},
    {"exit", false, exit_method},
    {"textDocument/didOpen", false, did_open},
    {"textDocument/didChange", false, did_change},
    {"textDocument/didClose", false, did_close},
    {"textDocument/didSave", false, ignore},
    {"textDocument/hover", true, hover},
    {"textDocument/definition", true, definition},
    {"textDocument/completion", true, completion},
    {"workspace/didChangeConfiguration", false, ignore},
};

const Method *find_method(llvm::StringRef name) {
  for (const Method &m : kMethods)
    if (name == m.name)
      return &m;
  return nullptr;
}

std::string result_reply(const json::Value &id, json::Value result) {
  json::Object o;
  o["jsonrpc"] = "2.0";
  o["id"] = id;
  o["result"] = std::move(result);
  return to_text(std::move(o));
}

/// A notification's error, which gets no reply: a message for the client's log.
void log_error(State &s, const std::string &method, const std::string &message) {
  json::Object p;
  p["type"] = 1;
  p["message"] = "etlc lsp: " + method + ": " + message;
  notify(s, "window/logMessage", std::move(p));
}

std::string error_reply(const json::Value &id, const RpcError &e) {
  return to_text(json::Object{
      {"jsonrpc", "2.0"},
      {"id", id},
      {"error", json::Object{{"code", e.code}, {"message", e.message}}}});
}

} // namespace

LspServer::LspServer(LspOptions opts) : s_(std::make_unique<State>()) {
  s_->opts = std::move(opts);
  s_->search.import_dirs = s_->opts.import_dirs;
  s_->search.stdlib_dir = default_stdlib_dir();
}

LspServer::~LspServer() = default;

bool LspServer::exited() const { return s_->exited; }
int LspServer::exit_code() const { return s_->shut_down ? 0 : 1; }

std::vector<std::string> LspServer::handle(const std::string &body) {
  State &s = *s_;
  s.out.clear();
  if (s.exited)
    return {};
  llvm::Expected<json::Value> parsed = json::parse(body);
  if (!parsed) {
    std::string why = llvm::toString(parsed.takeError());
    return {error_reply(nullptr, {ParseError, "invalid JSON: " + why})};
  }
  const json::Object *msg = parsed->getAsObject();
  if (!msg)
    return {error_reply(nullptr, {InvalidRequest, "a message must be a JSON object"})};
  const json::Value *id = msg->get("id");
  bool is_request = id != nullptr;
  if (id && id->kind() != json::Value::Number && id->kind() != json::Value::String)
    return {error_reply(nullptr, {InvalidRequest, "id must be a number or a string"})};
  std::optional<llvm::StringRef> method = msg->getString("method");
  if (!method) {
    if (id && (msg->get("result") || msg->get("error")))
      return {}; // a response to a request of ours: we send none
    return {error_reply(id ? *id : nullptr, {InvalidRequest, "method is missing"})};
  }
  const json::Value *pv = msg->get("params");
  json::Object empty;
  const json::Object *params = !pv || pv->kind() == json::Value::Null ? &empty : pv->getAsObject();
  RpcError err;
  const Method *m = find_method(*method);
  if (*method != "exit") {
    if (!s.initialized && *method != "initialize")
      err = {ServerNotInitialized, "the server is not initialized: send initialize first"};
    else if (s.shut_down)
      err = {InvalidRequest, "the server is shut down: only exit is accepted"};
  }
  if (!err.code && !m)
    err = {MethodNotFound, "unknown method: " + method->str()};
  if (!err.code && m->request != is_request)
    err = {InvalidRequest, method->str() + (m->request ? " is a request: it needs an id"
                                                        : " is a notification: it takes no id")};
  if (!err.code && !params)
    err = {InvalidParams, "params must be an object"};
  json::Value result = nullptr;
  if (!err.code) {
    try {
      result = m->handler(s, *params, err);
    } catch (const std::exception &e) {
      err = {InternalError, std::string("internal error: ") + e.what()};
    }
  }
  std::vector<std::string> replies;
  if (is_request)
    replies.push_back(err.code ? error_reply(*id, err) : result_reply(*id, std::move(result)));
  else if (err.code && err.code != MethodNotFound) // unanswered: the client logs it (an
                                                    // unknown notification is dropped)
    log_error(s, method->str(), err.message);
  for (std::string &o : s.out)
    replies.push_back(std::move(o));
  s.out.clear();
  return replies;
}

} // namespace etl

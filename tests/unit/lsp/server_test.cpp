// The language server's handler in process (compiler/lsp): framing, the
// JSON-RPC checks and lifecycle, diagnostics, hover, definition and
// completion on small programs, and garbage of every kind thrown at it.
#include "lsp/analysis.h"
#include "lsp/lsp.h"
#include "lsp/text.h"

#include <doctest/doctest.h>
#include <llvm/Support/JSON.h>

#include <random>
#include <sstream>

using namespace etl;
namespace json = llvm::json;

namespace {

json::Value parse(const std::string &s) {
  llvm::Expected<json::Value> v = json::parse(s);
  REQUIRE_MESSAGE(bool(v), s);
  return std::move(*v);
}

std::string msg(json::Object o) {
  o["jsonrpc"] = "2.0";
  std::string s;
  llvm::raw_string_ostream os(s);
  os << json::Value(std::move(o));
  return os.str();
}

const std::string kUri = "file:///tmp/etl-lsp-test/k.etl";

/// A server after initialize/initialized.
struct Session {
  LspServer server{LspOptions{}};
  int64_t next_id = 1;
  Session() {
    request("initialize", json::Object{{"processId", nullptr}, {"capabilities", json::Object{}}});
    server.handle(msg(json::Object{{"method", "initialized"}, {"params", json::Object{}}}));
  }
  /// The reply's object (result or error) to a request.
  json::Value request(const std::string &method, json::Object params) {
    int64_t id = next_id++;
    std::vector<std::string> out = server.handle(
        msg(json::Object{{"id", id}, {"method", method}, {"params", std::move(params)}}));
    REQUIRE(!out.empty());
    json::Value v = parse(out[0]);
    REQUIRE(v.getAsObject()->getInteger("id") == id);
    return v;
  }
  /// didOpen; returns the diagnostics published.
  json::Array open(const std::string &text, const std::string &uri = kUri) {
    std::vector<std::string> out = server.handle(msg(json::Object{
        {"method", "textDocument/didOpen"},
        {"params", json::Object{{"textDocument", json::Object{{"uri", uri},
                                                              {"languageId", "etl"},
                                                              {"version", 1},
                                                              {"text", text}}}}}}));
    REQUIRE(out.size() == 1);
    json::Value v = parse(out[0]);
    const json::Object *o = v.getAsObject();
    REQUIRE(o->getString("method") == llvm::StringRef("textDocument/publishDiagnostics"));
    return *o->getObject("params")->getArray("diagnostics");
  }
  json::Value at(const std::string &method, int64_t line, int64_t ch) {
    return request(method, json::Object{{"textDocument", json::Object{{"uri", kUri}}},
                                        {"position", json::Object{{"line", line}, {"character", ch}}}});
  }
};

const char *kProgram = R"(import std.math;
const TM = 16;
kernel k<M: dim, K: dim>(x: tensor<bf16>[M, K], y: tensor<f32>[M]) {
  event E[cdiv(M, TM)];
  task a[i in 0 .. cdiv(M, TM)] notifies E[i] {
    let t = cast<f32>(load(x[i * TM .. +TM, 0 .. +32]));
    store(y[i * TM .. +TM], sum(silu(t), axis = 1));
  }
  task b[i in 0 .. cdiv(M, TM)] waits E[i] {
    let u = load(y[i * TM .. +TM]);
    store(y[i * TM .. +TM], u);
  }
}
)";

std::string error_code(const json::Value &reply) {
  const json::Object *e = reply.getAsObject()->getObject("error");
  return e ? std::to_string(*e->getInteger("code")) : "none";
}

} // namespace

TEST_CASE("lsp: framing reads Content-Length messages and skips bad headers") {
  std::ostringstream out;
  write_message(out, "{\"a\":1}");
  CHECK(out.str() == "Content-Length: 7\r\n\r\n{\"a\":1}");
  std::istringstream in("Content-Type: x\r\nContent-Length: 2\r\n\r\n{}"
                        "X-Other: 1\r\n\r\n"
                        "Content-Length: 5\r\n\r\n{}");
  std::string body, error;
  REQUIRE(read_message(in, body, error));
  CHECK(body == "{}");
  CHECK(error.empty());
  REQUIRE(read_message(in, body, error));
  CHECK(error == "a message without a Content-Length header");
  CHECK_FALSE(read_message(in, body, error)); // truncated body: the end
}

TEST_CASE("lsp: serve_lsp answers over a stream and exits 0 after shutdown") {
  std::ostringstream in_text;
  write_message(in_text, msg(json::Object{{"id", 1}, {"method", "initialize"}, {"params", json::Object{}}}));
  write_message(in_text, msg(json::Object{{"id", 2}, {"method", "shutdown"}}));
  write_message(in_text, msg(json::Object{{"method", "exit"}}));
  std::istringstream in(in_text.str());
  std::ostringstream out, log;
  CHECK(serve_lsp(LspOptions{}, in, out, log) == 0);
  CHECK(out.str().find("\"capabilities\"") != std::string::npos);
  std::istringstream none("");
  std::ostringstream out2;
  CHECK(serve_lsp(LspOptions{}, none, out2, log) == 1); // input ended without exit
}

TEST_CASE("lsp: JSON-RPC errors: parse, invalid request, method not found, lifecycle") {
  LspServer s{LspOptions{}};
  auto one = [&](const std::string &body) {
    std::vector<std::string> out = s.handle(body);
    REQUIRE(out.size() == 1);
    return parse(out[0]);
  };
  CHECK(error_code(one("{not json")) == "-32700");
  CHECK(error_code(one("[1, 2]")) == "-32600");
  CHECK(error_code(one(R"({"jsonrpc":"2.0","id":{},"method":"initialize"})")) == "-32600");
  CHECK(error_code(one(R"({"jsonrpc":"2.0","id":1,"method":"textDocument/hover","params":{}})")) ==
        "-32002"); // before initialize
  CHECK(error_code(one(R"({"jsonrpc":"2.0","id":2,"method":"initialize","params":{}})")) == "none");
  CHECK(error_code(one(R"({"jsonrpc":"2.0","id":3,"method":"initialize","params":{}})")) ==
        "-32600"); // twice
  CHECK(error_code(one(R"({"jsonrpc":"2.0","id":4,"method":"no/such"})")) == "-32601");
  CHECK(s.handle(R"({"jsonrpc":"2.0","method":"no/such/notification"})").empty());
  CHECK(error_code(one(R"({"jsonrpc":"2.0","id":5,"method":"textDocument/hover","params":3})")) ==
        "-32602");
  CHECK(error_code(one(R"({"jsonrpc":"2.0","id":6,"method":"textDocument/hover","params":{}})")) ==
        "-32602");
  CHECK(error_code(one(R"({"jsonrpc":"2.0","id":"s","method":"shutdown"})")) == "none");
  CHECK(error_code(one(R"({"jsonrpc":"2.0","id":7,"method":"textDocument/hover","params":{}})")) ==
        "-32600"); // after shutdown
  CHECK_FALSE(s.exited());
  CHECK(s.handle(R"({"jsonrpc":"2.0","method":"exit"})").empty());
  CHECK(s.exited());
  CHECK(s.exit_code() == 0);
}

TEST_CASE("lsp: diagnostics as the compiler reports them, with their ranges") {
  Session s;
  json::Array d = s.open("const TM = 16;\nkernel k<M: dim>(y: tensor<f32>[M]) {\n"
                         "  task a[i in 0 .. cdiv(M, TM)] {\n"
                         "    store(y[i * TM .. +TM], zeros<f32>[TM] + undefined_name);\n  }\n}\n");
  REQUIRE(d.size() == 1);
  const json::Object *o = d[0].getAsObject();
  CHECK(o->getString("message") == llvm::StringRef("use of undefined name 'undefined_name'"));
  CHECK(o->getInteger("severity") == 1);
  const json::Object *r = o->getObject("range");
  CHECK(r->getObject("start")->getInteger("line") == 3);
  CHECK(r->getObject("start")->getInteger("character") == 45);
  CHECK(r->getObject("end")->getInteger("character") == 59);
  // The fixed program: an empty list, published again on didChange.
  CHECK(s.open(kProgram).empty());
  // Half-typed text: a syntax error, no crash.
  json::Array half = s.open("kernel k<M: dim>(y: tensor<f32>[M]) {\n  task a[i in 0 .. M] {\n    let t = lo");
  CHECK(!half.empty());
}

TEST_CASE("lsp: hover shows symbolic shapes, tile types and layouts, builtin docs") {
  Session s;
  REQUIRE(s.open(kProgram).empty());
  auto hover = [&](int64_t line, int64_t ch) {
    json::Value v = s.at("textDocument/hover", line, ch);
    const json::Object *r = v.getAsObject()->getObject("result");
    return r ? r->getObject("contents")->getString("value")->str() : std::string();
  };
  std::string x = hover(5, 27); // x in load(x[...])
  CHECK(x.find("tensor<bf16>[M, K]") != std::string::npos);
  std::string t = hover(5, 8); // let t
  CHECK(t.find("tile<f32>[16, 32]") != std::string::npos);
  CHECK(t.find("layout: ") != std::string::npos);
  CHECK(t.find("chosen at lowering") == std::string::npos); // the tile IR's
  CHECK(hover(5, 24).find("a tile from a tensor slice") != std::string::npos); // load
  CHECK(hover(3, 9).find("shape [cdiv(M, 16)]") != std::string::npos);       // event E
  CHECK(hover(6, 34).find("fn silu(x)") != std::string::npos);
  CHECK(hover(0, 0).empty()); // `import`: nothing
  CHECK(hover(400, 2).empty()); // past the end: an empty result, no error
}

TEST_CASE("lsp: go to definition of locals, events and imported fns") {
  Session s;
  REQUIRE(s.open(kProgram).empty());
  auto def = [&](int64_t line, int64_t ch) { return s.at("textDocument/definition", line, ch); };
  json::Value local = def(6, 37); // t in silu(t)
  const json::Object *r = local.getAsObject()->getObject("result");
  REQUIRE(r);
  CHECK(r->getString("uri") == llvm::StringRef(kUri));
  CHECK(r->getObject("range")->getObject("start")->getInteger("line") == 5);
  CHECK(r->getObject("range")->getObject("start")->getInteger("character") == 8);
  json::Value ev = def(8, 38); // E in waits E[i]
  const json::Object *e = ev.getAsObject()->getObject("result");
  REQUIRE(e);
  CHECK(e->getObject("range")->getObject("start")->getInteger("line") == 3);
  json::Value fn = def(6, 33); // silu
  const json::Object *f = fn.getAsObject()->getObject("result");
  REQUIRE(f);
  CHECK(f->getString("uri")->ends_with("/stdlib/std/math.etl"));
  CHECK(f->getObject("range")->getObject("start")->getInteger("line") == 11);
  CHECK(def(1, 12).getAsObject()->get("result")->kind() == json::Value::Null); // a literal
}

TEST_CASE("lsp: completion of builtins and their keyword arguments") {
  Session s;
  std::string text = kProgram;
  REQUIRE(s.open(text).empty());
  json::Value v = s.at("textDocument/completion", 6, 41); // after `sum(silu(t), `
  const json::Array *items = v.getAsObject()->getObject("result")->getArray("items");
  REQUIRE(items);
  std::vector<std::string> labels;
  for (const json::Value &i : *items)
    labels.push_back(i.getAsObject()->getString("label")->str());
  CHECK(std::find(labels.begin(), labels.end(), "axis") != labels.end());
  CHECK(std::find(labels.begin(), labels.end(), "load") != labels.end());
  CHECK(std::find(labels.begin(), labels.end(), "silu") != labels.end());
  CHECK(lsp::builtin_keywords("load") == std::vector<std::string>{"pad", "mask"});
  CHECK(lsp::builtin_keywords("dot") == std::vector<std::string>{"precision"});
  CHECK(lsp::builtin_keywords("exp").empty());
}

TEST_CASE("lsp: positions and URIs") {
  CHECK(lsp::offset_of("ab\ncd", 1, 1) == 4u);
  CHECK(lsp::offset_of("ab\ncd", 1, 99) == 5u); // clamped to the line
  CHECK(!lsp::offset_of("ab\ncd", 2, 0));
  CHECK(!lsp::offset_of("ab", -1, 0));
  CHECK(lsp::offset_of("\xF0\x9F\x98\x80x", 0, 2) == 4u); // an emoji is two UTF-16 units
  CHECK(lsp::uri_to_path("file:///a%20b/c.etl") == std::string("/a b/c.etl"));
  CHECK(!lsp::uri_to_path("untitled:Untitled-1"));
  CHECK(lsp::path_to_uri("/a b/c.etl") == "file:///a%20b/c.etl");
}

TEST_CASE("lsp: garbage of every kind gets an error or nothing, never a crash") {
  Session s;
  REQUIRE(s.open(kProgram).empty());
  std::mt19937 rng(12345);
  const std::vector<std::string> methods = {
      "initialize", "shutdown", "textDocument/hover", "textDocument/definition",
      "textDocument/completion", "textDocument/didOpen", "textDocument/didChange",
      "textDocument/didClose", "nope", ""};
  auto rand_value = [&](int depth, auto &self) -> json::Value {
    switch (rng() % (depth > 2 ? 5 : 7)) {
    case 0: return nullptr;
    case 1: return int64_t(rng() % 2000) - 1000;
    case 2: return std::string(kProgram).substr(rng() % 200, rng() % 200);
    case 3: return bool(rng() % 2);
    case 4: return double(rng()) / 7.0;
    case 5: {
      json::Array a;
      for (unsigned i = rng() % 4; i-- > 0;)
        a.push_back(self(depth + 1, self));
      return a;
    }
    default: {
      static const char *keys[] = {"textDocument", "uri", "position", "line", "character",
                                   "text", "contentChanges", "range", "start", "end", "version"};
      json::Object o;
      for (unsigned i = rng() % 5; i-- > 0;)
        o[keys[rng() % 11]] = self(depth + 1, self);
      if (rng() % 3 == 0)
        o["uri"] = kUri;
      return o;
    }
    }
  };
  for (int iter = 0; iter < 3000; ++iter) {
    std::string body;
    int64_t id = 1000 + iter;
    bool request = false;
    if (iter % 3 == 0) { // raw bytes
      for (unsigned n = rng() % 64; n-- > 0;)
        body += char(rng() % 256);
    } else {
      json::Object o{{"method", methods[rng() % methods.size()]}};
      if (rng() % 4 != 0) {
        o["id"] = id;
        request = true;
      }
      o["params"] = rand_value(0, rand_value);
      if (o.getString("method") == llvm::StringRef("shutdown") ||
          o.getString("method") == llvm::StringRef("textDocument/didClose"))
        o["method"] = "textDocument/hover"; // keep the session going
      body = msg(std::move(o));
      if (iter % 3 == 1 && !body.empty()) // a byte flipped
        body[rng() % body.size()] = char(rng() % 256), request = false;
    }
    std::vector<std::string> out = s.server.handle(body);
    for (const std::string &m : out) {
      json::Value v = parse(m); // every reply is JSON
      CHECK(v.getAsObject()->getString("jsonrpc") == llvm::StringRef("2.0"));
    }
    if (request) { // exactly one reply to a request, with its id
      REQUIRE(!out.empty());
      CHECK(parse(out[0]).getAsObject()->getInteger("id") == id);
    }
  }
  CHECK_FALSE(s.server.exited());
}

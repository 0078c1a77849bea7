//===- tests/unit/diag/source_test.cpp - SourceManager and rendering ------===//
#include "diag/diag.h"
#include "diag/source.h"

#include <doctest/doctest.h>

using namespace etl;

namespace {
SourceRange range(const SourceManager &sm, FileId f, uint32_t b, uint32_t e) {
  return {sm.loc(f, b), sm.loc(f, e)};
}
} // namespace

TEST_CASE("SourceManager: offsets to line:col") {
  SourceManager sm;
  FileId f = sm.add("a.etl", "ab\ncd\r\n\nxyz");
  CHECK(sm.path(f) == "a.etl");
  SourceLoc l = sm.loc(f, 0);
  CHECK(l.line == 1);
  CHECK(l.col == 1);
  l = sm.loc(f, 4); // 'd'
  CHECK(l.line == 2);
  CHECK(l.col == 2);
  l = sm.loc(f, 8); // 'x'
  CHECK(l.line == 4);
  CHECK(l.col == 1);
  CHECK(sm.loc(f, 1000).offset == 11); // clamped to the end
  CHECK(sm.line_text(f, 1) == "ab");
  CHECK(sm.line_text(f, 2) == "cd"); // no '\r'
  CHECK(sm.line_text(f, 3) == "");
  CHECK(sm.line_text(f, 4) == "xyz");
  CHECK(sm.line_text(f, 5) == "");
  l = sm.loc_line_col0(f, 2, 1);
  CHECK(l.offset == 4);
  CHECK(l.col == 2);
}

TEST_CASE("SourceManager: load") {
  SourceManager sm;
  FileId f = 0;
  std::string err;
  CHECK_FALSE(sm.load("/nonexistent/x.etl", f, err));
  CHECK_FALSE(err.empty());
}

TEST_CASE("join") {
  SourceManager sm;
  FileId f = sm.add("a.etl", "0123456789");
  SourceRange a = range(sm, f, 2, 4), b = range(sm, f, 6, 8);
  SourceRange j = join(a, b);
  CHECK(j.begin.offset == 2);
  CHECK(j.end.offset == 8);
  CHECK(join(b, a).begin.offset == 2);
  CHECK(join(SourceRange{}, b).begin.offset == 6);
  CHECK(join(a, SourceRange{}).end.offset == 4);
}

TEST_CASE("format_message") {
  CHECK(format_message("{0} and {1}", {"a", "b"}) == "a and b");
  CHECK(format_message("{1}{0}{1}", {"x", "y"}) == "yxy");
  CHECK(format_message("missing {3}", {"a"}) == "missing {3}");
  CHECK(format_message("braces {x} {", {}) == "braces {x} {");
}

TEST_CASE("render: caret under a multi-character range") {
  SourceManager sm;
  FileId f = sm.add("t.etl", "let t = foo + 1;\n");
  Diag d(sm);
  d.error(DiagId::UndefinedName, range(sm, f, 8, 11), {"foo"});
  CHECK(d.has_errors());
  CHECK(d.error_count() == 1);
  CHECK(d.render() == "t.etl:1:9: error: use of undefined name 'foo'\n"
                      "let t = foo + 1;\n"
                      "        ^~~\n");
}

TEST_CASE("render: tabs are kept in the caret line") {
  SourceManager sm;
  FileId f = sm.add("t.etl", "\t\tx = y;\n");
  Diag d(sm);
  d.error(DiagId::UndefinedName, range(sm, f, 6, 7), {"y"});
  CHECK(d.render() == "t.etl:1:7: error: use of undefined name 'y'\n"
                      "\t\tx = y;\n"
                      "\t\t    ^\n");
}

TEST_CASE("render: a range spanning lines is underlined to the end of its first line") {
  SourceManager sm;
  FileId f = sm.add("t.etl", "ab cdef\ngh\n");
  Diag d(sm);
  d.error(DiagId::SyntaxError, range(sm, f, 3, 10), {"msg"});
  CHECK(d.render() == "t.etl:1:4: error: msg\nab cdef\n   ^~~~\n");
}

TEST_CASE("render: empty range, end of line, notes, no location") {
  SourceManager sm;
  FileId f = sm.add("t.etl", "abc");
  Diag d(sm);
  d.error(DiagId::SyntaxError, range(sm, f, 3, 3), {"expected ';'"});
  d.note(DiagId::NoteDeclaredHere, range(sm, f, 0, 2), {"ab"});
  d.error(DiagId::CannotReadFile, SourceRange{}, {"x.etl", "gone"});
  CHECK(d.error_count() == 2);
  REQUIRE(d.diagnostics().size() == 3);
  CHECK(d.diagnostics()[1].severity == Severity::Note);
  CHECK(d.render() == "t.etl:1:4: error: expected ';'\nabc\n   ^\n"
                      "t.etl:1:1: note: 'ab' declared here\nabc\n^~\n"
                      "etlc: error: cannot read 'x.etl': gone\n");
}

TEST_CASE("diag table") {
  std::vector<DiagId> ids = all_diag_ids();
  REQUIRE(!ids.empty());
  CHECK(std::string(diag_name(DiagId::SyntaxError)) == "SyntaxError");
  CHECK(diag_severity(DiagId::NoteDeclaredHere) == Severity::Note);
  CHECK(std::string(diag_format(DiagId::UndefinedName)) == "use of undefined name '{0}'");
  SourceManager sm;
  Diag d(sm);
  d.report(DiagId::NoteDidYouMean, SourceRange{}, {"x"});
  CHECK(d.error_count() == 0);
}

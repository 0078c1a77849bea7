// Issue 14 item 3: the sim code section is checked as an ELF image before
// the dynamic loader sees it. A shortened section (checksum recomputed, so
// the artifact reader accepts it) used to kill the process with SIGBUS
// inside dlopen; now every such artifact is ETL_ERROR_INVALID_ARTIFACT with
// a message saying what lies outside the image, and the context stays
// usable. (Named to run after runtime_test.cpp; see sim_dynamic_test.cpp.)
#include "runtime_harness.h"

#include <elf.h>

#include "device.h"

using namespace etl_test;

namespace {

etlStatus load(etlContext ctx, const std::string &sim_code, etlProgram *prog) {
  std::string a = artifact(test_meta(), {{"sim", sim_code}});
  return etlProgramLoadMemory(ctx, a.data(), a.size(), prog);
}

Elf64_Ehdr header(const std::string &so) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, so.data(), sizeof eh);
  return eh;
}

void set_header(std::string &so, const Elf64_Ehdr &eh) { std::memcpy(&so[0], &eh, sizeof eh); }

} // namespace

TEST_CASE("loader: the test kernel passes the ELF check") {
  const std::string &k = kernel("");
  if (k.empty())
    return;
  char err[256] = "";
  CHECK(etl_elf_check(reinterpret_cast<const uint8_t *>(k.data()), k.size(), err, sizeof err) == 0);
  // unaligned inside the artifact: headers are copied out, not cast
  std::string shifted = " " + k;
  CHECK(etl_elf_check(reinterpret_cast<const uint8_t *>(shifted.data()) + 1, k.size(), err,
                      sizeof err) == 0);
}

TEST_CASE("loader: a shortened sim section is refused before dlopen (issue 14 item 3)") {
  const std::string &k = kernel("");
  if (k.empty())
    return;
  Ctx ctx;
  std::vector<size_t> lengths = {
      0, 1, sizeof(Elf64_Ehdr) - 1, sizeof(Elf64_Ehdr), k.size() / 2, k.size() - 1};
  for (size_t n = 64; n < k.size(); n += k.size() / 48)
    lengths.push_back(n);
  for (size_t n : lengths) {
    CAPTURE(n);
    etlProgram prog = nullptr;
    CHECK(load(ctx.ctx, k.substr(0, n), &prog) == ETL_ERROR_INVALID_ARTIFACT);
    CHECK(prog == nullptr);
    std::string msg = etlGetLastErrorMessage();
    INFO(msg);
    CHECK(msg.find("'sim' code section (" + std::to_string(n) + " bytes)") != std::string::npos);
    CHECK((msg.find("past the end") != std::string::npos ||
           msg.find("shorter than an ELF header") != std::string::npos ||
           msg.find("no ELF magic") != std::string::npos));
  }
  // the reproducer's shape: half the object, exact message
  etlProgram prog = nullptr;
  CHECK(load(ctx.ctx, k.substr(0, k.size() / 2), &prog) == ETL_ERROR_INVALID_ARTIFACT);
  CHECK(std::string(etlGetLastErrorMessage())
            .find("run past the end of the " + std::to_string(k.size() / 2) + "-byte image") !=
        std::string::npos);
  // the context is unharmed: the whole object loads and runs
  REQUIRE(load(ctx.ctx, k, &prog) == ETL_SUCCESS);
  Buffers b(ctx.ctx, 3);
  b.bind(prog);
  REQUIRE(etlRun(prog) == ETL_SUCCESS);
  b.check();
}

TEST_CASE("loader: ELF header, program and section headers are checked") {
  const std::string &k = kernel("");
  if (k.empty())
    return;
  Ctx ctx;
  auto refused = [&](const std::string &so, const std::string &what) {
    etlProgram prog = nullptr;
    CHECK(load(ctx.ctx, so, &prog) == ETL_ERROR_INVALID_ARTIFACT);
    CHECK(prog == nullptr);
    std::string msg = etlGetLastErrorMessage();
    INFO(msg);
    CHECK(msg.find(what) != std::string::npos);
  };
  Elf64_Ehdr good = header(k);
  std::string so = k;
  so[EI_CLASS] = ELFCLASS32;
  refused(so, "ELF class 1, expected 64-bit");
  so = k;
  so[0] = 'X';
  refused(so, "no ELF magic");
  Elf64_Ehdr eh = good;
  eh.e_machine = eh.e_machine == EM_X86_64 ? EM_AARCH64 : EM_X86_64;
  so = k;
  set_header(so, eh);
  refused(so, "ELF machine");
  eh = good;
  eh.e_type = ET_EXEC;
  set_header(so, eh);
  refused(so, "expected a shared object");
  eh = good;
  eh.e_phoff = k.size() - 8;
  set_header(so, eh);
  refused(so, "program headers at offset");
  eh = good;
  eh.e_phentsize = 40;
  set_header(so, eh);
  refused(so, "program header size 40");
  eh = good;
  eh.e_shoff = ~uint64_t(0) - 16; // offset + size wraps
  set_header(so, eh);
  refused(so, "section headers at offset");
  eh = good;
  eh.e_shstrndx = eh.e_shnum;
  set_header(so, eh);
  refused(so, "section name table index");

  // a PT_LOAD segment whose file range runs past the image (the SIGBUS case
  // without shortening the file), and one with more file than memory bytes
  so = k;
  for (uint32_t i = 0; i < good.e_phnum; ++i) {
    Elf64_Phdr ph;
    size_t at = good.e_phoff + i * sizeof ph;
    std::memcpy(&ph, k.data() + at, sizeof ph);
    if (ph.p_type != PT_LOAD)
      continue;
    Elf64_Phdr bad = ph;
    bad.p_filesz = k.size();
    bad.p_offset = 4096;
    std::memcpy(&so[at], &bad, sizeof bad);
    refused(so, "segment " + std::to_string(i) + " (type 1,");
    bad = ph;
    bad.p_filesz = ph.p_memsz + 1;
    bad.p_offset = 0;
    std::memcpy(&so[at], &bad, sizeof bad);
    if (bad.p_filesz <= k.size())
      refused(so, "bytes in the file but");
    break;
  }
  // a section whose contents lie past the image
  so = k;
  for (uint32_t i = 1; i < good.e_shnum; ++i) {
    Elf64_Shdr sh;
    size_t at = good.e_shoff + i * sizeof sh;
    std::memcpy(&sh, k.data() + at, sizeof sh);
    if (sh.sh_type == SHT_NOBITS)
      continue;
    sh.sh_size = k.size();
    std::memcpy(&so[at], &sh, sizeof sh);
    refused(so, "section " + std::to_string(i) + " (");
    break;
  }
  // still usable afterwards
  etlProgram prog = nullptr;
  REQUIRE(load(ctx.ctx, k, &prog) == ETL_SUCCESS);
  CHECK(etlProgramDestroy(prog) == ETL_SUCCESS);
}

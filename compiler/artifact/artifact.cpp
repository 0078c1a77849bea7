//===- artifact/artifact.cpp - Writing .etlb artifacts --------------------===//
//
// Little-endian encoding of etl_abi.h's metadata and file layout, the FNV-1a
// checksum over everything after the header, and the atomic file write
// (temporary file + fsync + rename + fsync of the directory).
//
//===----------------------------------------------------------------------===//
#include "artifact/artifact.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace etl {
namespace {

class Writer {
public:
  std::string out;
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i)
      out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i)
      out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void count(size_t n) {
    if (n > 0xffffffffu)
      throw std::length_error("artifact: count does not fit in u32");
    u32(static_cast<uint32_t>(n));
  }
  void str(const std::string &s) {
    count(s.size());
    out += s;
  }
  void expr(const ArtifactExpr &e) {
    count(e.size());
    for (int64_t w : e)
      u64(static_cast<uint64_t>(w));
  }
  void edges(const std::vector<ArtifactEdge> &es) {
    count(es.size());
    for (const ArtifactEdge &e : es) {
      u32(e.event);
      count(e.index.size());
      for (const ArtifactIndex &i : e.index) {
        u32(i.star);
        if (i.star == 0)
          expr(i.idx);
      }
    }
  }
};

uint32_t fnv1a(const std::string &s, size_t from) {
  uint32_t h = ETL_FNV1A_OFFSET;
  for (size_t i = from; i < s.size(); ++i) {
    h ^= static_cast<uint8_t>(s[i]);
    h *= ETL_FNV1A_PRIME;
  }
  return h;
}

void patch_u32(std::string &s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    s[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
void patch_u64(std::string &s, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    s[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

struct Section {
  uint32_t kind; ///< ETL_SECTION_*
  std::string target, payload;
};

/// Header, section table and the payloads, 8-byte aligned.
std::string write_sections(const std::vector<Section> &sections) {
  Writer w;
  w.out.append(ETL_ARTIFACT_MAGIC, 4);
  w.u32(ETL_ARTIFACT_VERSION);
  w.u64(0); // file_size, patched below
  w.count(sections.size());
  w.u32(0); // checksum, patched below
  w.u64(0); // reserved
  uint64_t offset = 32 + 32 * static_cast<uint64_t>(sections.size());
  for (const Section &s : sections) {
    // keep payloads 8-byte aligned (cheap, and friendlier to mmap readers)
    w.u32(s.kind);
    std::string target = s.target;
    target.resize(12, '\0');
    w.out += target;
    w.u64(offset);
    w.u64(s.payload.size());
    offset += (s.payload.size() + 7) & ~uint64_t(7);
  }
  for (const Section &s : sections) {
    w.out += s.payload;
    w.out.append((8 - s.payload.size() % 8) % 8, '\0');
  }
  patch_u64(w.out, 8, w.out.size());
  patch_u32(w.out, 20, fnv1a(w.out, 32));
  return std::move(w.out);
}

} // namespace

std::string serialize_meta(const ArtifactMeta &m) {
  Writer w;
  w.u32(m.threads_per_cta);
  w.u32(m.smem_bytes);
  w.str(m.kernel_name);
  w.str(m.source_path);
  w.u32(m.num_slots);
  w.count(m.dims.size());
  for (const ArtifactDim &d : m.dims) {
    w.str(d.name);
    w.u32(d.slot);
  }
  w.count(m.tensors.size());
  for (const ArtifactTensor &t : m.tensors) {
    w.str(t.name);
    w.u32(t.elem);
    w.u32(!t.is_buffer ? (t.read_only ? ETL_TENSOR_INPUT : ETL_TENSOR_PARAM)
          : t.zeros  ? ETL_TENSOR_BUFFER_ZEROS
                     : ETL_TENSOR_BUFFER);
    w.count(t.shape.size());
    for (const ArtifactExpr &e : t.shape)
      w.expr(e);
    w.u32(t.slot);
  }
  w.count(m.scalars.size());
  for (const ArtifactScalar &sc : m.scalars) {
    w.str(sc.name);
    w.u32(sc.elem);
    w.u32(sc.slot);
  }
  w.count(m.constraints.size());
  for (const ArtifactConstraint &c : m.constraints) {
    w.expr(c.cond);
    w.str(c.text);
    w.str(c.where);
  }
  w.count(m.events.size());
  for (const ArtifactEvent &e : m.events) {
    w.str(e.name);
    w.count(e.shape.size());
    for (const ArtifactExpr &x : e.shape)
      w.expr(x);
    w.u32(e.slot);
  }
  w.count(m.groups.size());
  for (const ArtifactGroup &g : m.groups) {
    w.str(g.name);
    w.count(g.domain.size());
    for (const auto &lohi : g.domain) {
      w.expr(lohi.first);
      w.expr(lohi.second);
    }
    w.edges(g.notifies);
    w.edges(g.waits);
    w.u32(g.schedule);
    w.u32(g.data_var);
    w.u32(g.layer_block);
  }
  w.count(m.order.size());
  for (uint32_t g : m.order)
    w.u32(g);
  w.count(m.tma_maps.size());
  for (const ArtifactTmaMap &t : m.tma_maps) {
    w.u32(t.tensor);
    w.u32(t.slot);
    w.count(t.box.size());
    for (uint32_t x : t.box)
      w.u32(x);
  }
  return std::move(w.out);
}

std::string serialize_artifact(const ArtifactMeta &meta,
                               const std::vector<std::pair<std::string, std::string>> &code) {
  static_assert(sizeof(etl_artifact_header) == 32, "header layout");
  static_assert(sizeof(etl_section_entry) == 32, "section entry layout");
  std::string meta_bytes = serialize_meta(meta);
  std::vector<Section> sections;
  sections.push_back({ETL_SECTION_META, "", std::move(meta_bytes)});
  for (const auto &c : code) {
    if (c.first.empty() || c.first.size() > 11)
      throw std::invalid_argument("artifact: target name must have 1 to 11 characters: '" +
                                  c.first + "'");
    std::string payload = c.second;
    if (c.first.rfind("sm_", 0) == 0 && (payload.empty() || payload.back() != '\0'))
      payload.push_back('\0'); // PTX is NUL-terminated text
    sections.push_back({ETL_SECTION_CODE, c.first, std::move(payload)});
  }
  return write_sections(sections);
}

std::string serialize_variants(const std::vector<ArtifactVariant> &variants) {
  if (variants.empty() || variants.size() > ETL_MAX_VARIANTS)
    throw std::invalid_argument("artifact: 1 to " + std::to_string(ETL_MAX_VARIANTS) +
                                " variants");
  Writer t;
  t.count(variants.size());
  for (const ArtifactVariant &v : variants) {
    t.str(v.label);
    t.count(v.ranges.size());
    for (const ArtifactVariant::Range &r : v.ranges) {
      t.str(r.dim);
      t.i64(r.lo);
      t.i64(r.hi);
    }
  }
  std::vector<Section> sections;
  sections.push_back({ETL_SECTION_VARIANTS, "", std::move(t.out)});
  for (const ArtifactVariant &v : variants)
    sections.push_back({ETL_SECTION_VARIANT, "", v.artifact});
  return write_sections(sections);
}

bool write_file_atomically(const std::string &path, const std::string &bytes, std::string &err) {
  size_t slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  std::string tmpl = path + ".tmp.XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  int fd = mkstemp(name.data());
  if (fd < 0) {
    err = "cannot create a temporary file next to '" + path + "': " + std::strerror(errno);
    return false;
  }
  auto fail = [&](const char *what) {
    err = std::string(what) + " '" + name.data() + "': " + std::strerror(errno);
    if (fd >= 0)
      close(fd);
    unlink(name.data());
    return false;
  };
  const char *p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return fail("cannot write");
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (fchmod(fd, 0644) != 0)
    return fail("cannot set permissions of");
  if (fsync(fd) != 0)
    return fail("cannot sync");
  if (close(fd) != 0) {
    fd = -1;
    return fail("cannot close");
  }
  fd = -1;
  if (rename(name.data(), path.c_str()) != 0) {
    err = "cannot rename '" + std::string(name.data()) + "' to '" + path +
          "': " + std::strerror(errno);
    unlink(name.data());
    return false;
  }
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) { // make the rename durable; best effort
    fsync(dfd);
    close(dfd);
  }
  return true;
}

} // namespace etl

//===- tools/etlrun/npy.cpp - Reading and writing .npy files --------------===//
//
// Header: magic "\x93NUMPY", major and minor version, the header's length
// (2 bytes in 1.0, 4 in 2.0/3.0), then a Python dict literal with 'descr',
// 'fortran_order' and 'shape', padded so the data starts on a 64-byte
// boundary.
//
//===----------------------------------------------------------------------===//
#include "npy.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

namespace etlrun {
namespace {

struct Descr {
  const char *text;
  etlDType dtype;
};
const Descr kDescrs[] = {{"<f4", ETL_F32},  {"<f2", ETL_F16},  {"<i4", ETL_I32}, {"<i8", ETL_I64},
                         {"|V2", ETL_BF16}, {"<V2", ETL_BF16}, {"|i1", ETL_I8},  {"|u1", ETL_U8},
                         {"<i2", ETL_I16},  {"<u2", ETL_U16},  {"<u4", ETL_U32}};

// The value of `key` in the header dict: the text after "'key':" up to the
// next top-level comma or the closing brace.
bool dict_value(const std::string &h, const std::string &key, std::string &out) {
  size_t k = h.find("'" + key + "'");
  if (k == std::string::npos)
    return false;
  size_t c = h.find(':', k);
  if (c == std::string::npos)
    return false;
  size_t i = c + 1, depth = 0;
  for (; i < h.size(); ++i) {
    char ch = h[i];
    if (ch == '(')
      ++depth;
    else if (ch == ')')
      --depth;
    else if ((ch == ',' || ch == '}') && depth == 0)
      break;
  }
  out = h.substr(c + 1, i - c - 1);
  size_t b = out.find_first_not_of(" "), e = out.find_last_not_of(" ");
  out = b == std::string::npos ? "" : out.substr(b, e - b + 1);
  return true;
}

float half_to_float(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 31, man = h & 1023;
  float v;
  if (exp == 0)
    v = std::ldexp((float)man, -24);
  else if (exp == 31)
    v = man ? NAN : INFINITY;
  else
    v = std::ldexp((float)(man | 1024), (int)exp - 25);
  return sign ? -v : v;
}

} // namespace

size_t dtype_size(etlDType dtype) {
  switch (dtype) {
  case ETL_I8:
  case ETL_U8:
  case ETL_F8E4M3:
  case ETL_F8E5M2:
  case ETL_I4: // packed: etlrun refuses them (main.cpp)
  case ETL_U4:
    return 1;
  case ETL_F16:
  case ETL_BF16:
  case ETL_I16:
  case ETL_U16:
    return 2;
  case ETL_I64:
    return 8;
  default:
    return 4;
  }
}

bool npy_read(const std::string &path, NpyArray &out, std::string &err) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    err = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    err = path + ": not a .npy file (no \\x93NUMPY magic)";
    return false;
  }
  int major = (unsigned char)bytes[6];
  size_t hlen, hstart;
  if (major == 1) {
    hlen = (unsigned char)bytes[8] | (size_t)(unsigned char)bytes[9] << 8;
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) {
      err = path + ": truncated .npy header";
      return false;
    }
    hlen = 0;
    for (int i = 3; i >= 0; --i)
      hlen = hlen << 8 | (unsigned char)bytes[8 + i];
    hstart = 12;
  } else {
    err = path + ": .npy format version " + std::to_string(major) + " (1, 2 or 3 expected)";
    return false;
  }
  if (hstart + hlen > bytes.size()) {
    err = path + ": truncated .npy header";
    return false;
  }
  std::string h = bytes.substr(hstart, hlen), descr, fortran, shape;
  if (!dict_value(h, "descr", descr) || !dict_value(h, "fortran_order", fortran) ||
      !dict_value(h, "shape", shape)) {
    err = path + ": malformed .npy header: " + h;
    return false;
  }
  if (descr.size() >= 2 && (descr[0] == '\'' || descr[0] == '"'))
    descr = descr.substr(1, descr.size() - 2);
  const Descr *d = nullptr;
  for (const Descr &c : kDescrs)
    if (descr == c.text)
      d = &c;
  if (!d) {
    err = path + ": element type '" + descr +
          "' is not one etlrun reads (<f4 f32, <f2 f16, <i4 i32, <i8 i64, |V2 bf16, |i1 i8, "
          "|u1 u8, <i2 i16, <u2 u16, <u4 u32)";
    return false;
  }
  if (fortran != "False") {
    err = path + ": Fortran-order array; save it in C order (np.ascontiguousarray)";
    return false;
  }
  out.dtype = d->dtype;
  out.shape.clear();
  std::string s = shape;
  for (char &ch : s)
    if (ch == '(' || ch == ')' || ch == ',')
      ch = ' ';
  std::istringstream in(s);
  long long v;
  size_t count = 1;
  while (in >> v) {
    if (v < 0) {
      err = path + ": negative extent in shape " + shape;
      return false;
    }
    out.shape.push_back(v);
    if (__builtin_mul_overflow(count, (size_t)v, &count)) {
      err = path + ": shape " + shape + " is too large";
      return false;
    }
  }
  size_t need = 0, start = hstart + hlen;
  if (__builtin_mul_overflow(count, dtype_size(out.dtype), &need) || bytes.size() - start != need) {
    err = path + ": shape " + shape + " of " + etlDTypeName(out.dtype) + " needs " +
          std::to_string(need) + " bytes of data, the file has " +
          std::to_string(bytes.size() - start);
    return false;
  }
  out.data.assign(bytes.begin() + (long)start, bytes.end());
  return true;
}

bool npy_write(const std::string &path, const NpyArray &a, std::string &err) {
  const char *descr = "<f4";
  for (const Descr &c : kDescrs)
    if (c.dtype == a.dtype) {
      descr = c.text;
      break;
    }
  std::string h = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < a.shape.size(); ++i)
    h += std::to_string(a.shape[i]) + (a.shape.size() == 1 || i + 1 < a.shape.size() ? "," : "");
  h += "), }";
  size_t total = 10 + h.size() + 1;
  h.append((64 - total % 64) % 64, ' ');
  h += '\n';
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) {
    err = path + ": cannot write: " + std::strerror(errno);
    return false;
  }
  char pre[10] = {
      '\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0, (char)(h.size() & 255), (char)(h.size() >> 8)};
  f.write(pre, 10);
  f.write(h.data(), (std::streamsize)h.size());
  f.write((const char *)a.data.data(), (std::streamsize)a.data.size());
  if (!f) {
    err = path + ": write failed";
    return false;
  }
  return true;
}

namespace {
/// The `T` stored at `p` (unaligned).
template <class T> T read_as(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
} // namespace

double npy_get(const NpyArray &a, size_t i) {
  const uint8_t *p = a.data.data() + i * dtype_size(a.dtype);
  switch (a.dtype) {
  case ETL_F32:
    return read_as<float>(p);
  case ETL_F16:
    return half_to_float(read_as<uint16_t>(p));
  case ETL_BF16: {
    uint32_t w = uint32_t(read_as<uint16_t>(p)) << 16;
    float f;
    std::memcpy(&f, &w, 4);
    return f;
  }
  case ETL_I32:
    return read_as<int32_t>(p);
  case ETL_I64:
    return (double)read_as<int64_t>(p);
  case ETL_I8:
    return (int8_t)p[0];
  case ETL_U8:
  case ETL_I4:
  case ETL_U4:
  case ETL_F8E4M3: // etlrun refuses FP8 tensors (main.cpp)
  case ETL_F8E5M2:
    return p[0];
  case ETL_I16:
    return read_as<int16_t>(p);
  case ETL_U16:
    return read_as<uint16_t>(p);
  case ETL_U32:
    return read_as<uint32_t>(p);
  }
  return 0;
}

} // namespace etlrun

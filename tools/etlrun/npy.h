//===- tools/etlrun/npy.h - Reading and writing .npy files ----------------===//
//
// The subset of numpy's .npy format (versions 1.0-3.0) etlrun needs: little-
// endian, C-order arrays of f32 ('<f4'), f16 ('<f2'), i32 ('<i4'), i64
// ('<i8'), i8/u8 ('|i1' '|u1'), i16/u16 ('<i2' '<u2'), u32 ('<u4') and bf16
// (two-byte void '|V2', how numpy stores ml_dtypes' bfloat16). Packed 4-bit
// types have no .npy form. Anything else is refused with a message naming the file and
// what it holds. No Debian package reads .npy from C++, hence this file.
//
//===----------------------------------------------------------------------===//
#ifndef ETL_TOOLS_NPY_H
#define ETL_TOOLS_NPY_H

#include <etl/etl.h>

#include <cstdint>
#include <string>
#include <vector>

namespace etlrun {

struct NpyArray {
  etlDType dtype = ETL_F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data; ///< elements, C order, little-endian
};

/// Bytes of one element of `dtype`.
size_t dtype_size(etlDType dtype);
/// Reads `path`; on failure returns false with `err` saying why.
bool npy_read(const std::string &path, NpyArray &out, std::string &err);
/// Writes `a` to `path`; on failure returns false with `err` saying why.
bool npy_write(const std::string &path, const NpyArray &a, std::string &err);
/// Element `i` of `a` as a double (bf16 and f16 widened).
double npy_get(const NpyArray &a, size_t i);

} // namespace etlrun

#endif // ETL_TOOLS_NPY_H

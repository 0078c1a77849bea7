/*===- src/elf.c - Checking the sim code section before dlopen -----------===
 *
 * The "sim" section of an artifact is an ELF shared object that sim.c hands
 * to the dynamic loader. The loader trusts the file: a program header whose
 * segment runs past the end of a shortened image makes it map pages beyond
 * end-of-file and die with SIGBUS on the first access. etl_elf_check refuses
 * such an image first, using <elf.h>'s structures: the ELF header (magic,
 * 64-bit class, byte order, version, ET_DYN, this machine), the program
 * header table and every segment's file range, every section's file range,
 * a PT_DYNAMIC segment inside a PT_LOAD one. Headers are copied out with
 * memcpy: the section need not be aligned inside the artifact.
 *
 * This is a structural check, not a verifier: a well-formed object still
 * runs whatever code it contains (an artifact is trusted like a library).
 *===----------------------------------------------------------------------===*/
#include <elf.h>
#include <stdio.h>
#include <string.h>

#include "device.h"

#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#define HOST_MACHINE_NAME "x86-64"
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#define HOST_MACHINE_NAME "AArch64"
#else
#error "the sim device needs an x86-64 or AArch64 host"
#endif

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the sim device needs a little-endian host"
#endif

/* [off, off + n) lies within [0, size). */
static int within(uint64_t off, uint64_t n, uint64_t size) {
  return off <= size && n <= size - off;
}

/* [off, off + count * entsize) lies within [0, size). */
static int table_within(uint64_t off, uint64_t count, uint64_t entsize, uint64_t size) {
  uint64_t bytes;
  return !__builtin_mul_overflow(count, entsize, &bytes) && within(off, bytes, size);
}

#define FAIL(...)                                                                                  \
  do {                                                                                             \
    snprintf(err, errsz, __VA_ARGS__);                                                             \
    return -1;                                                                                     \
  } while (0)

static int check_header(const Elf64_Ehdr *eh, uint64_t size, char *err, size_t errsz) {
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
    FAIL("no ELF magic number");
  if (eh->e_ident[EI_CLASS] != ELFCLASS64)
    FAIL("ELF class %u, expected 64-bit (ELFCLASS64)", eh->e_ident[EI_CLASS]);
  if (eh->e_ident[EI_DATA] != ELFDATA2LSB)
    FAIL("ELF byte order %u, expected little-endian", eh->e_ident[EI_DATA]);
  if (eh->e_ident[EI_VERSION] != EV_CURRENT || eh->e_version != EV_CURRENT)
    FAIL("ELF version %u, expected %u", eh->e_ident[EI_VERSION], EV_CURRENT);
  if (eh->e_type != ET_DYN)
    FAIL("ELF type %u, expected a shared object (ET_DYN)", eh->e_type);
  if (eh->e_machine != HOST_MACHINE)
    FAIL("ELF machine %u, expected %s (%u)", eh->e_machine, HOST_MACHINE_NAME, HOST_MACHINE);
  if (eh->e_ehsize != sizeof(Elf64_Ehdr))
    FAIL("ELF header size %u, expected %zu", eh->e_ehsize, sizeof(Elf64_Ehdr));
  if (eh->e_phnum == 0 || eh->e_phnum == PN_XNUM)
    FAIL("%u program headers", eh->e_phnum);
  if (eh->e_phentsize != sizeof(Elf64_Phdr))
    FAIL("program header size %u, expected %zu", eh->e_phentsize, sizeof(Elf64_Phdr));
  if (!table_within(eh->e_phoff, eh->e_phnum, sizeof(Elf64_Phdr), size))
    FAIL("the %u program headers at offset %llu run past the end of the %llu-byte image",
         eh->e_phnum, (unsigned long long)eh->e_phoff, (unsigned long long)size);
  return 0;
}

static int check_sections(const uint8_t *data, const Elf64_Ehdr *eh, uint64_t size, char *err,
                          size_t errsz) {
  if (eh->e_shoff == 0 && eh->e_shnum == 0)
    return 0; /* no section header table: the loader does not need one */
  if (eh->e_shnum == 0)
    FAIL("section header table at offset %llu with 0 entries (extended numbering is not "
         "supported)",
         (unsigned long long)eh->e_shoff);
  if (eh->e_shentsize != sizeof(Elf64_Shdr))
    FAIL("section header size %u, expected %zu", eh->e_shentsize, sizeof(Elf64_Shdr));
  if (!table_within(eh->e_shoff, eh->e_shnum, sizeof(Elf64_Shdr), size))
    FAIL("the %u section headers at offset %llu run past the end of the %llu-byte image",
         eh->e_shnum, (unsigned long long)eh->e_shoff, (unsigned long long)size);
  if (eh->e_shstrndx != SHN_UNDEF && eh->e_shstrndx >= eh->e_shnum)
    FAIL("section name table index %u, only %u sections", eh->e_shstrndx, eh->e_shnum);
  for (uint32_t i = 0; i < eh->e_shnum; ++i) {
    Elf64_Shdr sh;
    memcpy(&sh, data + eh->e_shoff + (uint64_t)i * sizeof sh, sizeof sh);
    if (sh.sh_type == SHT_NULL || sh.sh_type == SHT_NOBITS)
      continue;
    if (!within(sh.sh_offset, sh.sh_size, size))
      FAIL("section %u (%llu bytes at offset %llu) runs past the end of the %llu-byte image", i,
           (unsigned long long)sh.sh_size, (unsigned long long)sh.sh_offset,
           (unsigned long long)size);
  }
  return 0;
}

static int check_segments(const uint8_t *data, const Elf64_Ehdr *eh, uint64_t size, char *err,
                          size_t errsz) {
  uint32_t loads = 0;
  for (uint32_t i = 0; i < eh->e_phnum; ++i) {
    Elf64_Phdr ph;
    memcpy(&ph, data + eh->e_phoff + (uint64_t)i * sizeof ph, sizeof ph);
    if (!within(ph.p_offset, ph.p_filesz, size))
      FAIL("segment %u (type %u, %llu bytes at offset %llu) runs past the end of the %llu-byte "
           "image",
           i, ph.p_type, (unsigned long long)ph.p_filesz, (unsigned long long)ph.p_offset,
           (unsigned long long)size);
    if (ph.p_type != PT_LOAD)
      continue;
    ++loads;
    if (ph.p_filesz > ph.p_memsz)
      FAIL("loadable segment %u has %llu bytes in the file but %llu in memory", i,
           (unsigned long long)ph.p_filesz, (unsigned long long)ph.p_memsz);
    uint64_t end;
    if (__builtin_add_overflow(ph.p_vaddr, ph.p_memsz, &end))
      FAIL("loadable segment %u wraps around the address space", i);
  }
  if (loads == 0)
    FAIL("no loadable (PT_LOAD) segment");
  for (uint32_t i = 0; i < eh->e_phnum; ++i) {
    Elf64_Phdr dyn;
    memcpy(&dyn, data + eh->e_phoff + (uint64_t)i * sizeof dyn, sizeof dyn);
    if (dyn.p_type != PT_DYNAMIC)
      continue;
    int inside = 0;
    for (uint32_t k = 0; k < eh->e_phnum && !inside; ++k) {
      Elf64_Phdr ld;
      memcpy(&ld, data + eh->e_phoff + (uint64_t)k * sizeof ld, sizeof ld);
      inside = ld.p_type == PT_LOAD && dyn.p_vaddr >= ld.p_vaddr && dyn.p_memsz <= ld.p_filesz &&
               dyn.p_vaddr - ld.p_vaddr <= ld.p_filesz - dyn.p_memsz;
    }
    if (!inside)
      FAIL("the dynamic segment (%llu bytes at address %#llx) is not inside a loadable segment",
           (unsigned long long)dyn.p_memsz, (unsigned long long)dyn.p_vaddr);
  }
  return 0;
}

int etl_elf_check(const uint8_t *data, uint64_t size, char *err, size_t errsz) {
  Elf64_Ehdr eh;
  if (size < sizeof eh)
    FAIL("%llu bytes, shorter than an ELF header (%zu)", (unsigned long long)size, sizeof eh);
  memcpy(&eh, data, sizeof eh);
  if (check_header(&eh, size, err, errsz) || check_sections(data, &eh, size, err, errsz) ||
      check_segments(data, &eh, size, err, errsz))
    return -1;
  return 0;
}

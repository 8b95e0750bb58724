#include "vmi/vmi_elf_phdr.h"
#include "host/util/msg_fmt.h"

#include <elf.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int vmi_elf_check_ident(const uint8_t *file, size_t size, const char *path, char *err,
			size_t errlen)
{
	if (size < sizeof(Elf64_Ehdr) || memcmp(file, ELFMAG, SELFMAG) ||
	    file[EI_CLASS] != ELFCLASS64) {
		msg_fmt(err, errlen, "%s: not an ELF64 file", path);
		return -ENOEXEC;
	}
	if (file[EI_DATA] != ELFDATA2LSB) {
		msg_fmt(err, errlen, "%s: not a little-endian ELF64 file (EI_DATA %u)", path,
			 file[EI_DATA]);
		return -ENOEXEC;
	}
	return 0;
}

/* An index into the program header table with its PT_LOAD's range in one address space. */
struct range {
	uint64_t start, len;
	size_t index;
};

static int range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Sorts @r (@n ranges) and names the first two that overlap in @err; 0 or -ENOEXEC. */
static int check_overlap(struct range *r, size_t n, const char *field, const char *path, char *err,
			 size_t errlen)
{
	qsort(r, n, sizeof(*r), range_cmp);
	for (size_t i = 1; i < n; i++)
		if (r[i].start - r[i - 1].start < r[i - 1].len) {
			size_t a = r[i - 1].index < r[i].index ? r[i - 1].index : r[i].index;
			size_t b = r[i - 1].index < r[i].index ? r[i].index : r[i - 1].index;

			msg_fmt(err, errlen,
				 "%s: program headers %zu and %zu (PT_LOAD) overlap: %s 0x%" PRIx64
				 " (p_memsz 0x%" PRIx64 ") and 0x%" PRIx64,
				 path, a, b, field, r[i - 1].start, r[i - 1].len, r[i].start);
			return -ENOEXEC;
		}
	return 0;
}

/* No two of the @n segments @v (program header numbers @idx) overlap in virtual (@phys: physical)
 * addresses; @r is room for @n ranges. 0, or -ENOEXEC naming the first two that do. Empty segments
 * hold no byte: they overlap nothing. */
static int check_ranges(const struct vmi_segment *v, const size_t *idx, size_t n, bool phys,
			struct range *r, const char *path, char *err, size_t errlen)
{
	size_t m = 0;

	if (!n)
		return 0; /* nothing allocated, nothing to sort (found by fuzzing) */
	for (size_t i = 0; i < n; i++)
		if (v[i].memsz)
			r[m++] = (struct range){.start = phys ? v[i].paddr : v[i].vaddr,
						.len = v[i].memsz,
						.index = idx[i]};
	return check_overlap(r, m, phys ? "p_paddr" : "p_vaddr", path, err, errlen);
}

/* The number of program headers: e_phnum, or with PN_XNUM section header 0's sh_info. */
static int phdr_count(const uint8_t *file, size_t size, const Elf64_Ehdr *eh, const char *path,
		      uint64_t *count, char *err, size_t errlen)
{
	uint16_t phnum = le16toh(eh->e_phnum);
	uint64_t shoff = le64toh(eh->e_shoff);
	Elf64_Shdr sh0;

	if (phnum != PN_XNUM) {
		*count = phnum;
		return 0;
	}
	if (!shoff || shoff > size || size - shoff < sizeof(sh0)) {
		msg_fmt(err, errlen,
			 "%s: e_phnum is PN_XNUM (0xffff) but section header 0, which holds the "
			 "count, is not in the file (e_shoff 0x%" PRIx64 ")",
			 path, shoff);
		return -ENOEXEC;
	}
	memcpy(&sh0, file + shoff, sizeof(sh0));
	*count = le32toh(sh0.sh_info);
	return 0;
}

long vmi_elf_load_segments(const uint8_t *file, size_t size, const char *path,
			   struct vmi_segment **segs, char *err, size_t errlen)
{
	struct vmi_segment *v = NULL;
	struct range *r = NULL;
	size_t *idx = NULL;
	Elf64_Ehdr eh;
	uint64_t phoff, count;
	size_t n = 0;
	int ret;

	*segs = NULL;
	memcpy(&eh, file, sizeof(eh));
	phoff = le64toh(eh.e_phoff);
	ret = phdr_count(file, size, &eh, path, &count, err, errlen);
	if (ret < 0)
		return ret;
	if (count && le16toh(eh.e_phentsize) != sizeof(Elf64_Phdr)) {
		msg_fmt(err, errlen, "%s: e_phentsize %u, not the %zu bytes of an Elf64_Phdr",
			 path, le16toh(eh.e_phentsize), sizeof(Elf64_Phdr));
		return -ENOEXEC;
	}
	if (phoff > size || count > (size - phoff) / sizeof(Elf64_Phdr)) {
		msg_fmt(err, errlen,
			 "%s: the program header table (e_phoff 0x%" PRIx64 ", e_phnum %" PRIu64
			 ") lies past the end of the file (%zu bytes)",
			 path, phoff, count, size);
		return -ENOEXEC;
	}
	for (uint64_t i = 0; i < count; i++) {
		Elf64_Phdr ph;
		uint64_t off, filesz, memsz, vaddr, paddr;

		memcpy(&ph, file + phoff + i * sizeof(ph), sizeof(ph));
		if (le32toh(ph.p_type) != PT_LOAD)
			continue;
		off = le64toh(ph.p_offset);
		filesz = le64toh(ph.p_filesz);
		memsz = le64toh(ph.p_memsz);
		vaddr = le64toh(ph.p_vaddr);
		paddr = le64toh(ph.p_paddr);
		if (filesz > memsz) {
			msg_fmt(err, errlen,
				 "%s: program header %" PRIu64 " (PT_LOAD): p_filesz 0x%" PRIx64
				 " is larger than p_memsz 0x%" PRIx64,
				 path, i, filesz, memsz);
			goto bad;
		}
		if (off > size || filesz > size - off) {
			msg_fmt(err, errlen,
				 "%s: program header %" PRIu64 " (PT_LOAD): p_offset 0x%" PRIx64
				 " + p_filesz 0x%" PRIx64
				 " lies past the end of the file (%zu bytes)",
				 path, i, off, filesz, size);
			goto bad;
		}
		if (memsz && (vaddr + memsz - 1 < vaddr || paddr + memsz - 1 < paddr)) {
			msg_fmt(err, errlen,
				 "%s: program header %" PRIu64 " (PT_LOAD): %s 0x%" PRIx64
				 " + p_memsz 0x%" PRIx64 " wraps around the address space",
				 path, i, vaddr + memsz - 1 < vaddr ? "p_vaddr" : "p_paddr",
				 vaddr + memsz - 1 < vaddr ? vaddr : paddr, memsz);
			goto bad;
		}
		if (n == VMI_ELF_MAX_LOADS) {
			msg_fmt(err, errlen, "%s: more than %u PT_LOAD program headers", path,
				 VMI_ELF_MAX_LOADS);
			goto bad;
		}
		if (!v) {
			v = calloc(VMI_ELF_MAX_LOADS, sizeof(*v));
			r = calloc(VMI_ELF_MAX_LOADS, sizeof(*r));
			idx = calloc(VMI_ELF_MAX_LOADS, sizeof(*idx));
			if (!v || !r || !idx) {
				msg_fmt(err, errlen, "%s: out of memory", path);
				free(v);
				free(r);
				free(idx);
				return -ENOMEM;
			}
		}
		idx[n] = (size_t)i; /* the header's number, for messages */
		v[n++] = (struct vmi_segment){.paddr = paddr,
					      .vaddr = vaddr,
					      .filesz = filesz,
					      .memsz = memsz,
					      .data = file + off};
	}
	if (check_ranges(v, idx, n, false, r, path, err, errlen) < 0 ||
	    check_ranges(v, idx, n, true, r, path, err, errlen) < 0)
		goto bad;
	free(r);
	free(idx);
	*segs = v;
	return (long)n;
bad:
	free(v);
	free(r);
	free(idx);
	return -ENOEXEC;
}

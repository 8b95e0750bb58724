#include "tests/common/kernel_image.h"
#include "vmi/vmi_kallsyms.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OUT_MAX (512u << 20) /* most bytes of decompressed vmlinux accepted */
#define BLOCK	0x200000ull

static uint8_t *slurp(FILE *f, size_t *len)
{
	size_t cap = 1 << 20, n = 0, r;
	uint8_t *buf = malloc(cap);

	while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap) {
			uint8_t *nb = cap < OUT_MAX ? realloc(buf, cap * 2) : NULL;

			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
	}
	*len = n;
	return buf;
}

/* The payload from @at decompressed by @cmd (reads stdin, trailing garbage tolerated). */
static uint8_t *decompress(const uint8_t *z, size_t zlen, size_t at, const char *cmd, size_t *len)
{
	char tmp[] = "/tmp/hvt-kimg-XXXXXX", line[256];
	uint8_t *out = NULL;
	int fd = mkstemp(tmp);
	FILE *p;

	if (fd < 0)
		return NULL;
	if (write(fd, z + at, zlen - at) == (ssize_t)(zlen - at)) {
		snprintf(line, sizeof(line), "%s < %s 2>/dev/null", cmd, tmp);
		p = popen(line, "r");
		if (p) {
			out = slurp(p, len);
			pclose(p);
		}
	}
	close(fd);
	unlink(tmp);
	return out;
}

static int lay_out(const uint8_t *elf, size_t elen, struct kernel_image *ki)
{
	const Elf64_Ehdr *eh = (const void *)elf;
	uint64_t lo = UINT64_MAX, hi = 0;

	if (elen < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_phentsize != sizeof(Elf64_Phdr) ||
	    eh->e_phoff > elen || eh->e_phnum > (elen - eh->e_phoff) / sizeof(Elf64_Phdr))
		return -EINVAL;
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned i = 0; i < eh->e_phnum; i++) {
			const Elf64_Phdr *ph = (const void *)(elf + eh->e_phoff + i * sizeof(*ph));

			if (ph->p_type != PT_LOAD || ph->p_vaddr < 0xffffffff80000000ull)
				continue;
			if (ph->p_offset > elen || ph->p_filesz > elen - ph->p_offset ||
			    ph->p_filesz > ph->p_memsz)
				return -EINVAL;
			if (pass == 0) {
				lo = ph->p_vaddr < lo ? ph->p_vaddr : lo;
				hi =
				    ph->p_vaddr + ph->p_memsz > hi ? ph->p_vaddr + ph->p_memsz : hi;
			} else {
				memcpy(ki->img + (ph->p_vaddr - ki->base), elf + ph->p_offset,
				       ph->p_filesz);
			}
		}
		if (pass == 0) {
			if (lo >= hi || hi - lo > OUT_MAX)
				return -EINVAL;
			ki->base = lo & ~(BLOCK - 1);
			ki->len = hi - ki->base;
			ki->img = calloc(1, ki->len);
			if (!ki->img)
				return -ENOMEM;
		}
	}
	return 0;
}

int kernel_image_load(const char *path, struct kernel_image *ki)
{
	static const struct {
		const char *magic;
		size_t len;
		const char *cmd;
	} fmt[] = {{"\x28\xb5\x2f\xfd", 4, "zstd -dc"},
		   {"\xfd"
		    "7zXZ",
		    6, "xz -dc"},
		   {"\x1f\x8b\x08", 3, "gzip -dc"},
		   {"\x02\x21\x4c\x18", 4, "lz4 -dc"}}; /* legacy frames: Debian 12's kernels */
	size_t zlen = 0, elen = 0;
	uint8_t *z, *elf = NULL;
	FILE *f = fopen(path, "rb");
	int ret = -EINVAL;

	memset(ki, 0, sizeof(*ki));
	if (!f)
		return -ENOENT;
	z = slurp(f, &zlen);
	fclose(f);
	for (size_t k = 0; z && !elf && k < sizeof(fmt) / sizeof(fmt[0]); k++) {
		const uint8_t *m = memmem(z, zlen, fmt[k].magic, fmt[k].len);

		if (m)
			elf = decompress(z, zlen, (size_t)(m - z), fmt[k].cmd, &elen);
		/* no such decompressor, or the magic was a chance match inside another format's
		 * payload: the next */
		if (elf && (elen < sizeof(Elf64_Ehdr) || memcmp(elf, ELFMAG, SELFMAG))) {
			free(elf);
			elf = NULL;
		}
	}
	if (elf)
		ret = lay_out(elf, elen, ki);
	free(elf);
	free(z);
	return ret;
}

struct find_sym {
	const char *name;
	uint64_t addr;
};

static int find_sym(void *ctx, uint64_t addr, char type, const char *name)
{
	struct find_sym *f = ctx;

	(void)type;
	if (!f->addr && !strcmp(name, f->name))
		f->addr = addr;
	return 0;
}

long kernel_image_past_fentry(const struct kernel_image *ki, const char *func, unsigned *first_end)
{
	struct find_sym f = {.name = func};
	char err[256];
	const uint8_t *b;
	unsigned off = 0;

	if (vmi_kallsyms_decode(ki->img, ki->len, ki->base, find_sym, &f, err, sizeof(err)) < 0 ||
	    !f.addr || f.addr < ki->base || f.addr - ki->base + 16 > ki->len)
		return -ENOENT;
	b = ki->img + (f.addr - ki->base);
	if (!memcmp(b, "\xf3\x0f\x1e\xfa", 4))
		off = 4; /* ENDBR64 */
	*first_end = off ? 4 : 5;
	/* the fentry site: CALL __fentry__ in the image, or the NOP5 objtool put there */
	if (b[off] != 0xe8 && memcmp(b + off, "\x0f\x1f\x44\x00\x00", 5))
		return -EILSEQ;
	return off + 5;
}

#include "vmi/vmi_elf.h"
#include "vmi/vmi_file.h"
#include "host/util/msg_fmt.h"

#include <elf.h>
#include <endian.h>
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int add_symbols(struct vmi_elf *img, Elf *elf, Elf_Scn *scn, GElf_Shdr *sh)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

	for (size_t i = 0; d && i < n; i++) {
		GElf_Sym s;
		const char *name;
		struct vmi_symtab *t;

		if (!gelf_getsym(d, i, &s) || s.st_shndx == SHN_UNDEF)
			continue;
		switch (GELF_ST_TYPE(s.st_info)) {
		case STT_FUNC:
			t = &img->funcs;
			break;
		case STT_OBJECT:
			t = &img->objects;
			break;
		default:
			continue;
		}
		name = elf_strptr(elf, sh->sh_link, s.st_name);
		if (!name || !*name)
			continue;
		if (vmi_symtab_add(t, s.st_value, s.st_size, name) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int read_mcount(struct vmi_elf *img, Elf_Scn *scn, GElf_Shdr *sh)
{
	Elf_Data *d = elf_getdata(scn, NULL);

	if (!d || sh->sh_type == SHT_NOBITS)
		return -ENODATA;
	img->nr_mcount = d->d_buf ? d->d_size / 8 : 0;
	img->mcount = malloc((img->nr_mcount ? img->nr_mcount : 1) * 8);
	if (!img->mcount)
		return -ENOMEM;
	if (img->nr_mcount) {
		memcpy(img->mcount, d->d_buf, img->nr_mcount * 8);
		qsort(img->mcount, img->nr_mcount, 8, u64_cmp);
	}
	return 0;
}

/* Parses the @size bytes at @file (mapped as @map, or malloc'd as @owned: @img takes either over,
 * also on failure), named @path in messages. */
static int elf_parse(struct vmi_elf *img, const uint8_t *file, size_t size,
		     const struct vmi_file_map *map, uint8_t *owned, const char *path,
		     int need_mcount, char *err, size_t errlen)
{
	Elf *elf = NULL;
	GElf_Ehdr eh;
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	int ret, have_mcount = 0;
	long nr;

	memset(img, 0, sizeof(*img));
	img->file = file;
	img->file_size = size;
	img->owned = owned;
	if (map)
		img->map = *map;
	img->path = strdup(path);
	if (!img->path) {
		ret = -ENOMEM;
		goto fail;
	}
	/* the header and the program headers first, on the raw bytes: nothing else is read of a
	 * file that is no ELF64, and a defect is named before libelf would paper over it */
	ret = vmi_elf_check_ident(img->file, img->file_size, path, err, errlen);
	if (ret < 0)
		goto fail;
	elf_version(EV_CURRENT);
	elf = elf_memory((char *)img->file, img->file_size);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    gelf_getclass(elf) != ELFCLASS64) {
		msg_fmt(err, errlen, "%s: not an ELF64 file", path);
		ret = -ENOEXEC;
		goto fail;
	}
	if (eh.e_machine != EM_X86_64 || (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)) {
		msg_fmt(err, errlen, "%s: not an x86_64 executable (e_machine %u, e_type %u)",
			 path, eh.e_machine, eh.e_type);
		ret = -ENOEXEC;
		goto fail;
	}
	img->entry = eh.e_entry;
	if (elf_getshdrstrndx(elf, &shstrndx) < 0) {
		msg_fmt(err, errlen,
			"%s: malformed section headers (e_shoff 0x%" PRIx64
			 ", e_shnum %u, e_shstrndx %u)",
			 path, (uint64_t)eh.e_shoff, eh.e_shnum, eh.e_shstrndx);
		ret = -ENOEXEC;
		goto fail;
	}
	nr = vmi_elf_load_segments(img->file, img->file_size, path, &img->segs, err, errlen);
	if (nr < 0) {
		ret = (int)nr;
		goto fail;
	}
	img->nr_segs = (size_t)nr;
	if (!img->nr_segs) {
		msg_fmt(err, errlen, "%s: no PT_LOAD program header: nothing to load", path);
		ret = -ENOEXEC;
		goto fail;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (sh.sh_type == SHT_SYMTAB) {
			ret = add_symbols(img, elf, scn, &sh);
			if (ret < 0)
				goto fail;
		} else if (name && !strcmp(name, "__mcount_loc")) {
			if (have_mcount) { /* found by fuzzing: the first list leaked */
				msg_fmt(err, errlen, "%s: more than one __mcount_loc section",
					path);
				ret = -ENOEXEC;
				goto fail;
			}
			ret = read_mcount(img, scn, &sh);
			if (ret < 0) {
				msg_fmt(err, errlen, "%s: __mcount_loc is empty", path);
				goto fail;
			}
			have_mcount = 1;
		}
	}
	vmi_symtab_sort(&img->funcs);
	vmi_symtab_sort(&img->objects);
	if (need_mcount && (!have_mcount || !img->nr_mcount)) {
		msg_fmt(
		    err, errlen,
		    "%s: no __mcount_loc section (build the guest with -pg -mfentry -mnop-mcount "
		    "-mrecord-mcount)",
		    path);
		ret = -ENODATA;
		goto fail;
	}
	elf_end(elf);
	return 0;
fail:
	if (ret == -ENOMEM)
		msg_fmt(err, errlen, "%s: out of memory", path);
	if (elf)
		elf_end(elf);
	vmi_elf_close(img);
	return ret;
}

int vmi_elf_open(struct vmi_elf *img, const char *path, int need_mcount, char *err, size_t errlen)
{
	struct vmi_file_map m;
	int ret;

	memset(img, 0, sizeof(*img));
	ret = vmi_file_map(NULL, path, VMI_ELF_MAX_SIZE, &m, err, errlen);
	if (ret < 0)
		return ret;
	return elf_parse(img, m.data, m.size, &m, NULL, path, need_mcount, err, errlen);
}

int vmi_elf_open_mem(struct vmi_elf *img, uint8_t *file, size_t size, const char *path,
		     int need_mcount, char *err, size_t errlen)
{
	return elf_parse(img, file, size, NULL, file, path, need_mcount, err, errlen);
}

const uint8_t *vmi_elf_bytes_at(const struct vmi_elf *img, uint64_t vaddr, size_t len)
{
	for (size_t i = 0; i < img->nr_segs; i++) {
		const struct vmi_segment *s = &img->segs[i];

		if (vaddr >= s->vaddr && vaddr - s->vaddr <= s->filesz &&
		    len <= s->filesz - (vaddr - s->vaddr))
			return s->data + (vaddr - s->vaddr);
	}
	return NULL;
}

void vmi_elf_close(struct vmi_elf *img)
{
	vmi_symtab_free(&img->funcs);
	vmi_symtab_free(&img->objects);
	free(img->segs);
	free(img->mcount);
	free(img->owned);
	vmi_file_unmap(&img->map);
	free(img->path);
	memset(img, 0, sizeof(*img));
}

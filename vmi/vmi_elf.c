#include "vmi/vmi_elf.h"
#include "host/util/msg_fmt.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int read_file(const char *path, uint8_t **buf, size_t *size, char *err, size_t errlen)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int e;

	if (fd < 0 || fstat(fd, &st) < 0) {
		e = errno;
		msg_fmt(err, errlen, "%s: %s", path, strerror(e));
		if (fd >= 0)
			close(fd);
		return -e;
	}
	if (!S_ISREG(st.st_mode)) {
		msg_fmt(err, errlen, "%s: not a regular file", path);
		close(fd);
		return -EINVAL;
	}
	*size = st.st_size;
	*buf = malloc(*size ? *size : 1);
	if (!*buf) {
		msg_fmt(err, errlen, "%s: out of memory", path);
		close(fd);
		return -ENOMEM;
	}
	for (size_t off = 0; off < *size;) {
		ssize_t n = pread(fd, *buf + off, *size - off, off);

		if (n <= 0) {
			e = n < 0 ? errno : EIO;
			msg_fmt(err, errlen, "%s: read: %s", path, strerror(e));
			free(*buf);
			close(fd);
			return -e;
		}
		off += n;
	}
	close(fd);
	return 0;
}

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
		case STT_FUNC: t = &img->funcs; break;
		case STT_OBJECT: t = &img->objects; break;
		default: continue;
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

int vmi_elf_open(struct vmi_elf *img, const char *path, int need_mcount, char *err, size_t errlen)
{
	uint8_t *file = NULL;
	size_t size = 0;
	int ret;

	memset(img, 0, sizeof(*img));
	ret = read_file(path, &file, &size, err, errlen);
	if (ret < 0)
		return ret;
	return vmi_elf_open_mem(img, file, size, path, need_mcount, err, errlen);
}

int vmi_elf_open_mem(struct vmi_elf *img, uint8_t *file, size_t size, const char *path,
		     int need_mcount, char *err, size_t errlen)
{
	Elf *elf = NULL;
	GElf_Ehdr eh;
	size_t shstrndx, nph;
	Elf_Scn *scn = NULL;
	int ret, have_mcount = 0;

	memset(img, 0, sizeof(*img));
	img->file = file;
	img->file_size = size;
	img->path = strdup(path);
	if (!img->path) {
		ret = -ENOMEM;
		goto fail;
	}
	elf_version(EV_CURRENT);
	elf = elf_memory((char *)img->file, img->file_size);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    gelf_getclass(elf) != ELFCLASS64) {
		msg_fmt(err, errlen, "%s: not an ELF64 file", path);
		ret = -ENOEXEC;
		goto fail;
	}
	if (eh.e_machine != EM_X86_64 || (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)) {
		msg_fmt(err, errlen, "%s: not an x86_64 executable (e_machine %u, e_type %u)", path,
			eh.e_machine, eh.e_type);
		ret = -ENOEXEC;
		goto fail;
	}
	img->entry = eh.e_entry;
	if (elf_getphdrnum(elf, &nph) < 0 || elf_getshdrstrndx(elf, &shstrndx) < 0) {
		msg_fmt(err, errlen, "%s: malformed ELF headers", path);
		ret = -ENOEXEC;
		goto fail;
	}
	img->segs = calloc(nph ? nph : 1, sizeof(*img->segs));
	if (!img->segs) {
		ret = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (ph.p_offset > img->file_size || ph.p_filesz > img->file_size - ph.p_offset ||
		    ph.p_filesz > ph.p_memsz) {
			msg_fmt(err, errlen, "%s: segment %zu lies outside the file", path, i);
			ret = -ENOEXEC;
			goto fail;
		}
		img->segs[img->nr_segs++] = (struct vmi_segment){
			.paddr = ph.p_paddr,
			.vaddr = ph.p_vaddr,
			.filesz = ph.p_filesz,
			.memsz = ph.p_memsz,
			.data = img->file + ph.p_offset,
		};
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
	free(img->file);
	free(img->path);
	memset(img, 0, sizeof(*img));
}

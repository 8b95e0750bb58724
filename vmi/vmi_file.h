/* Input files the user names (the guest ELF, a vmlinux or System.map, a kernel image and initrd,
 * session files, trace.dat): opened without ever blocking, checked to be a regular file of bounded
 * size before a byte is read, and mapped read-only rather than read whole. Every input path of
 * hvtrace goes through here, so a FIFO, a directory or a device is one error line, never a hang. */
#ifndef HVT_VMI_FILE_H
#define HVT_VMI_FILE_H

#include <stddef.h>
#include <stdint.h>

/* A read-only mapping of a whole input file (NULL @data for an empty file). */
struct vmi_file_map {
	const uint8_t *data;
	size_t size;
};

/* Opens @path for reading without blocking (O_NONBLOCK for the open, cleared once fstat shows a
 * regular file), refusing anything else and any file larger than @max bytes (0: no bound). Returns
 * an fd (the caller closes it) with the file's size in *@size (may be NULL), or a negative errno
 * with one line in @err: "@what @path: REASON" (@what may be NULL), e.g. "--session s.txt: not a
 * regular file (a FIFO)". Any thread. */
int vmi_file_open(const char *what, const char *path, uint64_t max, uint64_t *size, char *err,
		  size_t errlen);

/* vmi_file_open, then maps the whole file read-only into @m (private: later changes to the file
 * need not show). 0 or a negative errno with one line in @err. The caller unmaps with
 * vmi_file_unmap. Any thread. */
int vmi_file_map(const char *what, const char *path, uint64_t max, struct vmi_file_map *m,
		 char *err, size_t errlen);

/* Unmaps what vmi_file_map mapped (a zeroed @m is fine); @m is zeroed. */
void vmi_file_unmap(struct vmi_file_map *m);

/* The kind of a non-regular file for messages ("a FIFO", "a directory", ...), from st_mode. Pure.
 */
const char *vmi_file_kind(unsigned mode);

#endif

/* Whole files read into memory and written from it, for tests that compare what a run wrote with
 * what they want or give it files to read. */
#ifndef HVT_TESTS_FILES_H
#define HVT_TESTS_FILES_H

#include <stddef.h>

/* The whole of file @path, NUL-terminated (malloc'd, the caller frees it), or NULL with errno set
 * if it cannot be opened or read. */
char *hv_read_file(const char *path);
/* The same, failing the running cmocka test (naming @path and the reason) if it cannot be read. */
char *hv_slurp(const char *path);

/* Writes the @len bytes at @data to the file @path (created or truncated); fails the running cmocka
 * test if it cannot. */
void hv_write_file(const char *path, const void *data, size_t len);
/* The same for the string @text. */
void hv_write_text(const char *path, const char *text);

#endif

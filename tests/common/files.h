/* Whole files read into memory, for tests that compare what a run wrote with what they want. */
#ifndef HVT_TESTS_FILES_H
#define HVT_TESTS_FILES_H

/* The whole of file @path, NUL-terminated (malloc'd, the caller frees it), or NULL with errno set
 * if it cannot be opened or read. */
char *hv_read_file(const char *path);
/* The same, failing the running cmocka test (naming @path and the reason) if it cannot be read. */
char *hv_slurp(const char *path);

#endif

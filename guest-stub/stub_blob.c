#include "guest-stub/stub_blob.h"

const struct stub_blob *stub_blob_of(unsigned elf_machine)
{
	static const struct stub_blob *const blobs[] = {&stub_blob_x86_64, &stub_blob_arm64};

	for (size_t i = 0; i < sizeof(blobs) / sizeof(blobs[0]); i++)
		if (blobs[i]->elf_machine == elf_machine)
			return blobs[i];
	return NULL;
}

/* Patchable function entries of a guest: the addresses a compiler recorded (e.g. __mcount_loc),
 * each paired with the function it starts. */
#ifndef HVT_VMI_SITES_H
#define HVT_VMI_SITES_H

#include "arch/arch.h"
#include "vmi/vmi_symtab.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vmi_site {
	uint64_t addr;
	const struct vmi_sym *func; /* borrowed from the symbol table the sites were built from */
	/* No fentry site: @addr is the function's first instruction (after its ENDBR64 or the NOP
	 * sealed over it), which a breakpoint leaves to run in place instead of a NOP5 emulated. */
	bool entry;
	/* An instruction inside the function, not its entry (an -e func+OFFSET event): @func is a
	 * name of its own ("func+0xOFF"), and the probe records entries alone, never a return. */
	bool inside;
};

struct vmi_sites {
	struct vmi_site *v;
	size_t nr;
};

/* Pairs each recorded address with its function (addresses inside no function are skipped; one site
 * per function, the first). @funcs must outlive @sites. Returns 0 or -ENOMEM. */
int vmi_sites_build(struct vmi_sites *sites, const uint64_t *addrs, size_t n,
		    const struct vmi_symtab *funcs);

/* The site of a function of ISA @a whose first 9 bytes are @p, the function at @func: a NOP5
 * right there, or after ENDBR64 (f3 0f 1e fa) or after a 4-byte NOP the kernel seals an ENDBR64
 * into when nothing calls the function indirectly (IBT: 66 0f 1f 00 as in 6.12, 0f 1f 40 d6 as
 * in 7.3). Returns the site's address in *@site and true, or false (no NOP5: not traceable now, or
 * __pfx_ call padding). Pure. */
bool vmi_site_entry(const struct arch *a, const uint8_t *p, uint64_t func, uint64_t *site);

/* The first instruction of the function (ISA @a) at @func whose first 4 bytes are @p that a probe
 * may stop at: after an ENDBR64 or the 4-byte NOP Linux seals one into (a stop there is one
 * instruction later and sees the same registers and stack), else @func itself. Pure. */
uint64_t vmi_entry_insn(const struct arch *a, const uint8_t *p, uint64_t func);

/* Appends the @n sites of @add (entry sites, for functions that have none in @sites yet) and sorts
 * @sites by address again: pointers into @sites->v taken before are invalid afterwards. 0 or
 * -ENOMEM (@sites unchanged). */
int vmi_sites_add(struct vmi_sites *sites, const struct vmi_site *add, size_t n);

/* Checks that @bytes (the site_len bytes at the site) are @a's patchable NOP. Returns 0, or
 * -EILSEQ with "<func>: site 0x<addr> holds <bytes>, not a NOP5" in @err. Pure. */
int vmi_site_check(const struct arch *a, const struct vmi_site *site, const uint8_t *bytes,
		   char *err, size_t errlen);

void vmi_sites_free(struct vmi_sites *sites);

/* Binary search over @nr elements of @size bytes at @base, sorted by the u64 key at byte @key_off
 * of each (a site table and the like): the first index whose key is >= @key, @nr if none. Pure. */
size_t vmi_lower_bound(const void *base, size_t nr, size_t size, size_t key_off, uint64_t key);

#endif

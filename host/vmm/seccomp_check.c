/* A thread's seccomp filters run here on a syscall that is about to be injected. */
#include "host/vmm/seccomp_check.h"

#include <errno.h>
#include <linux/audit.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/ptrace.h>

#ifndef PTRACE_SECCOMP_GET_FILTER
#define PTRACE_SECCOMP_GET_FILTER 0x420c
#endif

int seccomp_check_eval(const struct sock_filter *f, unsigned n, const struct seccomp_data *d,
		       uint32_t *ret)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};

	if (n == 0 || n > BPF_MAXINSNS)
		return -EINVAL;
	for (unsigned pc = 0; pc < n; pc++) {
		const struct sock_filter *i = &f[pc];
		uint32_t k = i->k, src = BPF_SRC(i->code) == BPF_X ? x : k;

		switch (BPF_CLASS(i->code)) {
		case BPF_LD:
		case BPF_LDX: {
			uint32_t v;

			switch (BPF_MODE(i->code)) {
			case BPF_ABS:
				if (BPF_CLASS(i->code) != BPF_LD || BPF_SIZE(i->code) != BPF_W ||
				    k > sizeof(*d) - 4 || (k & 3))
					return -EINVAL;
				memcpy(&v, (const uint8_t *)d + k, 4);
				break;
			case BPF_IMM:
				v = k;
				break;
			case BPF_MEM:
				if (k >= BPF_MEMWORDS)
					return -EINVAL;
				v = mem[k];
				break;
			case BPF_LEN:
				v = sizeof(*d);
				break;
			default:
				return -EINVAL;
			}
			if (BPF_CLASS(i->code) == BPF_LD)
				a = v;
			else
				x = v;
			break;
		}
		case BPF_ST:
		case BPF_STX:
			if (k >= BPF_MEMWORDS)
				return -EINVAL;
			mem[k] = BPF_CLASS(i->code) == BPF_ST ? a : x;
			break;
		case BPF_ALU:
			switch (BPF_OP(i->code)) {
			case BPF_ADD:
				a += src;
				break;
			case BPF_SUB:
				a -= src;
				break;
			case BPF_MUL:
				a *= src;
				break;
			case BPF_DIV:
				if (!src) {
					*ret = 0;
					return 0;
				}
				a /= src;
				break;
			case BPF_MOD:
				if (!src) {
					*ret = 0;
					return 0;
				}
				a %= src;
				break;
			case BPF_OR:
				a |= src;
				break;
			case BPF_AND:
				a &= src;
				break;
			case BPF_XOR:
				a ^= src;
				break;
			case BPF_LSH:
				a = src >= 32 ? 0 : a << src;
				break;
			case BPF_RSH:
				a = src >= 32 ? 0 : a >> src;
				break;
			case BPF_NEG:
				a = -a;
				break;
			default:
				return -EINVAL;
			}
			break;
		case BPF_JMP: {
			unsigned to;
			bool t;

			if (BPF_OP(i->code) == BPF_JA) {
				if (k >= n - pc - 1)
					return -EINVAL;
				pc += k;
				break;
			}
			switch (BPF_OP(i->code)) {
			case BPF_JEQ:
				t = a == src;
				break;
			case BPF_JGT:
				t = a > src;
				break;
			case BPF_JGE:
				t = a >= src;
				break;
			case BPF_JSET:
				t = (a & src) != 0;
				break;
			default:
				return -EINVAL;
			}
			to = t ? i->jt : i->jf;
			if (to >= n - pc - 1)
				return -EINVAL;
			pc += to;
			break;
		}
		case BPF_RET:
			if (BPF_RVAL(i->code) == BPF_K)
				*ret = k;
			else if (BPF_RVAL(i->code) == BPF_A)
				*ret = a;
			else
				return -EINVAL;
			return 0;
		case BPF_MISC:
			if (BPF_MISCOP(i->code) == BPF_TAX)
				x = a;
			else if (BPF_MISCOP(i->code) == BPF_TXA)
				a = x;
			else
				return -EINVAL;
			break;
		default:
			return -EINVAL;
		}
	}
	return -EINVAL; /* ran off the end without a return */
}

/* The kernel's precedence: a lower rank wins. */
static unsigned rank(uint32_t action)
{
	switch (action & SECCOMP_RET_ACTION_FULL) {
	case SECCOMP_RET_KILL_PROCESS:
		return 0;
	case SECCOMP_RET_KILL_THREAD:
		return 1;
	case SECCOMP_RET_TRAP:
		return 2;
	case SECCOMP_RET_ERRNO:
		return 3;
	case SECCOMP_RET_USER_NOTIF:
		return 4;
	case SECCOMP_RET_TRACE:
		return 5;
	case SECCOMP_RET_LOG:
		return 6;
	case SECCOMP_RET_ALLOW:
		return 7;
	default:
		return 0; /* the kernel treats an unknown action as KILL_PROCESS */
	}
}

int seccomp_check_thread(pid_t tid, long nr, const uint64_t args[6], uint64_t ip, uint32_t *action)
{
	static struct sock_filter prog[BPF_MAXINSNS]; /* main thread only */
	struct seccomp_data d = {
	    .nr = (int)nr, .arch = AUDIT_ARCH_X86_64, .instruction_pointer = ip};
	uint32_t best = SECCOMP_RET_ALLOW;

	for (int i = 0; i < 6; i++)
		d.args[i] = args[i];
	for (unsigned long idx = 0; idx < SECCOMP_CHECK_MAX_FILTERS; idx++) {
		long n = ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)idx, NULL);
		uint32_t r;
		int rc;

		if (n < 0 && errno == ENOENT && idx > 0)
			break; /* no more filters */
		if (n < 0 && errno == EINVAL && idx == 0)
			break; /* not in filter mode: no filter */
		if (n < 0)
			return errno == EMEDIUMTYPE ? -EINVAL
						    : -errno; /* EMEDIUMTYPE: an eBPF one */
		if (n == 0 || n > BPF_MAXINSNS)
			return -EINVAL;
		if (ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)idx, prog) != n)
			return -EINVAL;
		rc = seccomp_check_eval(prog, (unsigned)n, &d, &r);
		if (rc)
			return rc;
		if (rank(r) < rank(best))
			best = r;
	}
	*action = best;
	return 0;
}

const char *seccomp_check_action_name(uint32_t action)
{
	switch (action & SECCOMP_RET_ACTION_FULL) {
	case SECCOMP_RET_KILL_PROCESS:
		return "SECCOMP_RET_KILL_PROCESS";
	case SECCOMP_RET_KILL_THREAD:
		return "SECCOMP_RET_KILL_THREAD";
	case SECCOMP_RET_TRAP:
		return "SECCOMP_RET_TRAP";
	case SECCOMP_RET_ERRNO:
		return "SECCOMP_RET_ERRNO";
	case SECCOMP_RET_USER_NOTIF:
		return "SECCOMP_RET_USER_NOTIF";
	case SECCOMP_RET_TRACE:
		return "SECCOMP_RET_TRACE";
	case SECCOMP_RET_LOG:
		return "SECCOMP_RET_LOG";
	case SECCOMP_RET_ALLOW:
		return "SECCOMP_RET_ALLOW";
	default:
		return "an unknown seccomp action (the kernel kills)";
	}
}

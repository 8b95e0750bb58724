#include "tests/common/record.h"

#include <string.h>

struct hvt_record hv_record(uint8_t type, uint64_t ts, unsigned cpu, uint64_t ip, uint64_t parent,
			    uint8_t depth, int32_t pid, const char *comm)
{
	struct vmi_task task = {.pid = pid};
	struct hvt_record r;

	memcpy(task.comm, comm, strnlen(comm, VMI_COMM_LEN));
	hvt_record_entry(&r, ts, cpu, ip, parent, &task);
	r.type = type;
	r.depth = depth;
	return r;
}

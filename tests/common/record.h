/* The one way tests build a record (struct hvt_record) to feed a sink, a filter or a ring. */
#ifndef HVT_TESTS_RECORD_H
#define HVT_TESTS_RECORD_H

#include "host/trace/record.h"

#include <stdint.h>

/* A record of @type (enum hvt_rec_type) filled as the tracer fills an entry (hvt_record_entry),
 * then given @type and @depth; value and duration 0. @comm's first VMI_COMM_LEN bytes at most are
 * copied (no NUL when it is that long: a hostile guest's comm), the rest is zero. Pure. */
struct hvt_record hv_record(uint8_t type, uint64_t ts, unsigned cpu, uint64_t ip, uint64_t parent,
			    uint8_t depth, int32_t pid, const char *comm);

#endif

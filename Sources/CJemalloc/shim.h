#include <stddef.h>

/// jemalloc's control interface (`mallctl` of <jemalloc/jemalloc.h>), declared alone: that header also declares
/// `malloc`, `free` and the rest, which Swift's Glibc module declares too. daogate calls it for jemalloc's version;
/// the call is also what keeps the library linked into the binary, whose every allocation (Swift's runtime,
/// SQLite's, libmicrohttpd's) jemalloc's `malloc` then serves in place of glibc's.
int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);

/// glibc's `Dl_info` and `dladdr`, which its headers declare only under `_GNU_SOURCE` (not so for Swift's Glibc
/// module): the file of the object an address is in, for the start-up log's word on which `malloc` serves.
typedef struct {
    const char *dli_fname;
    void *dli_fbase;
    const char *dli_sname;
    void *dli_saddr;
} daogate_dl_info;
extern int daogate_dladdr(const void *address, daogate_dl_info *info) __asm__("dladdr");

#ifndef DAOGATE_CRE2_H
#define DAOGATE_CRE2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// RE2 is a C++ library, which Swift cannot call without C++ interoperability
/// (which would spread to every module that imports this one): these four
/// functions are its C face, over `re2::RE2` with UTF-8 text and Perl syntax.
typedef struct daogate_re2 daogate_re2;

/// Compiles `pattern` (`length` bytes, NULs included) with at most
/// `max_memory` bytes for the program and its DFA cache. On failure answers
/// NULL and writes RE2's message, NUL-terminated, into `error`.
daogate_re2 *daogate_re2_compile(const char *pattern, size_t length, int64_t max_memory,
                                 char *error, size_t error_capacity);

/// The number of instructions of the compiled program: what the cost of a
/// match is proportional to, per byte of text.
int daogate_re2_program_size(const daogate_re2 *regex);

/// Whether the whole of `text` (`length` bytes) matches: the anchors are the
/// engine's (`RE2::ANCHOR_BOTH`), not text added to the pattern. Thread-safe.
bool daogate_re2_full_match(const daogate_re2 *regex, const char *text, size_t length);

void daogate_re2_free(daogate_re2 *regex);

#ifdef __cplusplus
}
#endif

#endif

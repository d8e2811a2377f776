#include "CRE2.h"

#include <re2/re2.h>
#include <cstring>

struct daogate_re2 {
    re2::RE2 regex;
    daogate_re2(const re2::StringPiece &pattern, const re2::RE2::Options &options) : regex(pattern, options) {}
};

daogate_re2 *daogate_re2_compile(const char *pattern, size_t length, int64_t max_memory,
                                 char *error, size_t error_capacity) {
    re2::RE2::Options options;
    options.set_log_errors(false);
    options.set_never_capture(true);
    options.set_max_mem(max_memory);
    auto *compiled = new daogate_re2(re2::StringPiece(pattern, length), options);
    if (compiled->regex.ok()) return compiled;
    if (error_capacity > 0) {
        const std::string &message = compiled->regex.error();
        size_t count = message.size() < error_capacity - 1 ? message.size() : error_capacity - 1;
        std::memcpy(error, message.data(), count);
        error[count] = 0;
    }
    delete compiled;
    return nullptr;
}

int daogate_re2_program_size(const daogate_re2 *regex) {
    return regex->regex.ProgramSize();
}

bool daogate_re2_full_match(const daogate_re2 *regex, const char *text, size_t length) {
    re2::StringPiece subject(text, length);
    return regex->regex.Match(subject, 0, length, re2::RE2::ANCHOR_BOTH, nullptr, 0);
}

void daogate_re2_free(daogate_re2 *regex) {
    delete regex;
}

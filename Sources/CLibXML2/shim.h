#include <libxml/xmlversion.h>
/* libxml2's encoding.h includes ICU's headers when libxml2 is built with ICU,
 * and their UErrorCode clashes with the ICU that Foundation bundles, in any
 * Swift module importing both. ICU only adds two trailing pointer fields to
 * xmlCharEncodingHandler, a struct daogate never allocates or reads, so the
 * shim hides them. */
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

static void daogate_xml_ignore_error(void *context, xmlErrorPtr error) {
    (void)context; (void)error;
}

/// libxml2 prints every parse error to stderr unless a handler is set; the
/// loader reads errors from the parser context instead, so this silences the
/// print. The handler is per thread, so call it before each parse.
static inline void daogate_xml_silence_errors(void) {
    xmlSetStructuredErrorFunc(NULL, daogate_xml_ignore_error);
}

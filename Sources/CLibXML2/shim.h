#include <libxml/parser.h>
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

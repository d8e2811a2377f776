/*
 * The HTTP baseline: libmicrohttpd alone, answering every request with
 * 200 {"result":"something"}, to measure the Swift transport against.
 *
 *   gcc -O2 bench/constant_server.c -lmicrohttpd -o constant_server
 *   constant_server PORT THREADS
 *
 * Its daemon is started with the transport's flags and limits (bench_daemon.h),
 * and it answers as the transport does: on the request's last call, with a
 * response copied from a buffer per request.
 */
#include "bench_daemon.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char body[] = "{\"result\":\"something\"}";

/* Any non-NULL value: marks a request whose first call (headers) has passed. */
static int seen_headers;

static enum MHD_Result answer(void *cls, struct MHD_Connection *connection,
                              const char *url, const char *method,
                              const char *version, const char *upload_data,
                              size_t *upload_data_size, void **req_cls)
{
    (void)cls; (void)url; (void)method; (void)version; (void)upload_data;
    if (*req_cls == NULL) {
        *req_cls = &seen_headers;
        return MHD_YES;
    }
    if (*upload_data_size != 0) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    return answer_json(connection, MHD_HTTP_OK, body, sizeof body - 1);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s PORT THREADS\n", argv[0]);
        return 2;
    }
    int port = atoi(argv[1]);
    int threads = atoi(argv[2]);
    if (port < 0 || port > 65535 || threads < 1) {
        fprintf(stderr, "usage: %s PORT THREADS (PORT 0-65535, THREADS >= 1)\n", argv[0]);
        return 2;
    }

    return serve_until_signal(port, threads, answer, NULL);
}

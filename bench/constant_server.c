/*
 * The HTTP baseline: libmicrohttpd alone, answering every request with
 * 200 {"result":"something"}, to measure the Swift transport against.
 *
 *   gcc -O2 bench/constant_server.c -lmicrohttpd -o constant_server
 *   constant_server PORT THREADS
 *
 * It uses the transport's flags and limits (internal polling thread + epoll,
 * a pool of THREADS threads, 30 s timeout, 1024 connections, 64 KiB per
 * connection), binds 127.0.0.1, and answers as the transport does: on the
 * request's last call, with a response copied from a buffer per request.
 * It prints "listening on PORT" and runs until SIGTERM or SIGINT.
 */
#include <microhttpd.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
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
    struct MHD_Response *response = MHD_create_response_from_buffer(
        sizeof body - 1, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (response == NULL)
        return MHD_NO;
    MHD_add_response_header(response, "Content-Type", "application/json");
    enum MHD_Result result = MHD_queue_response(connection, MHD_HTTP_OK, response);
    MHD_destroy_response(response);
    return result;
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

    /* Blocked before the pool starts, so every worker inherits the mask and
       sigwait below receives the signal. */
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, NULL);

    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons((uint16_t)port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    struct MHD_Daemon *daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC,
        (uint16_t)port, NULL, NULL, answer, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&address,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)threads,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)1024,
        /* The same per-connection pool as daogate (HTTPServer.swift): libmicrohttpd zeroes it after every
           request, so the floor is libmicrohttpd's work at daogate's settings. */
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 * 1024),
        MHD_OPTION_END);
    if (daemon == NULL) {
        fprintf(stderr, "cannot listen on 127.0.0.1:%d\n", port);
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    printf("listening on %u\n", info != NULL ? (unsigned)info->port : (unsigned)port);
    fflush(stdout);

    int received = 0;
    sigwait(&signals, &received);
    MHD_stop_daemon(daemon);
    return 0;
}

/*
 * The daemon of the C baselines (bench/constant_server.c, bench/sqlite_server.c):
 * libmicrohttpd started with the transport's flags and limits (internal
 * polling thread + epoll, a pool of THREADS threads, 30 s timeout, 1024
 * connections, the same 32 KiB pool per connection as daogate: libmicrohttpd
 * zeroes it after every request, so a baseline measures libmicrohttpd's work at
 * daogate's settings), bound to 127.0.0.1. Prints "listening on PORT" and
 * serves until SIGTERM or SIGINT.
 */
#include <microhttpd.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

/* Answers with a JSON body copied into the response, as daogate's transport answers. */
static inline enum MHD_Result answer_json(struct MHD_Connection *connection, unsigned int status,
                                          const char *body, size_t length)
{
    struct MHD_Response *response = MHD_create_response_from_buffer(length, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (response == NULL)
        return MHD_NO;
    MHD_add_response_header(response, "Content-Type", "application/json");
    enum MHD_Result result = MHD_queue_response(connection, status, response);
    MHD_destroy_response(response);
    return result;
}

/* The process's exit status: 0 once stopped by a signal, 1 when it cannot listen. */
static inline int serve_until_signal(int port, int threads, MHD_AccessHandlerCallback answer,
                                     MHD_RequestCompletedCallback completed)
{
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
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 * 1024),
        MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
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

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <microhttpd.h>

/// `MHD_start_daemon` is variadic, which Swift cannot call: this wrapper passes
/// the transport's fixed list of options, each with the exact C type that
/// libmicrohttpd reads from the argument list (`unsigned int`, `size_t`,
/// pointers). The logger comes first, as libmicrohttpd asks, so that start-up
/// errors reach it too. One `context` serves as the closure of every callback.
/// `address` is what is bound; `port` only names the port in libmicrohttpd's
/// messages.
static inline struct MHD_Daemon *daogate_mhd_start_daemon(
    unsigned int flags,
    uint16_t port,
    const struct sockaddr *address,
    unsigned int thread_pool_size,
    unsigned int connection_timeout,
    unsigned int connection_limit,
    size_t connection_memory_limit,
    MHD_AccessHandlerCallback handler,
    MHD_RequestCompletedCallback completed,
    MHD_LogCallback logger,
    void *context)
{
    return MHD_start_daemon(flags, port, NULL, NULL, handler, context,
                            MHD_OPTION_EXTERNAL_LOGGER, logger, context,
                            MHD_OPTION_SOCK_ADDR, address,
                            MHD_OPTION_THREAD_POOL_SIZE, thread_pool_size,
                            MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, connection_memory_limit,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, context,
                            MHD_OPTION_END);
}

/// `MHD_get_daemon_info` is variadic, which Swift cannot call: this returns
/// the port the daemon is bound to (0 if libmicrohttpd cannot tell).
static inline uint16_t daogate_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

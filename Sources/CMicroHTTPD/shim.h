#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <microhttpd.h>

/// The callback libmicrohttpd calls with a request's target (path and query)
/// as the client sent it, before it cuts the query off and decodes the path;
/// what it returns becomes the request's `con_cls`.
typedef void *(*daogate_mhd_target_callback)(void *cls, const char *uri, struct MHD_Connection *connection);

/// `MHD_start_daemon` is variadic, which Swift cannot call: this wrapper passes
/// the transport's fixed list of options, each with the exact C type that
/// libmicrohttpd reads from the argument list (`unsigned int`, `int`,
/// `size_t`, pointers). The logger comes first, as libmicrohttpd asks, so that
/// start-up errors reach it too. One `context` serves as the closure of every
/// callback. `address` is what is bound; `port` only names the port in
/// libmicrohttpd's messages. `per_address_limit` 0 means no limit.
/// `MHD_OPTION_STRICT_FOR_CLIENT` 1 refuses an HTTP/1.1 request without
/// `Host` and a space in the request target.
static inline struct MHD_Daemon *daogate_mhd_start_daemon(
    unsigned int flags,
    uint16_t port,
    const struct sockaddr *address,
    unsigned int thread_pool_size,
    unsigned int connection_timeout,
    unsigned int connection_limit,
    unsigned int per_address_limit,
    size_t connection_memory_limit,
    MHD_AccessHandlerCallback handler,
    MHD_RequestCompletedCallback completed,
    MHD_NotifyConnectionCallback connections,
    daogate_mhd_target_callback target,
    MHD_LogCallback logger,
    void *context)
{
    return MHD_start_daemon(flags, port, NULL, NULL, handler, context,
                            MHD_OPTION_EXTERNAL_LOGGER, logger, context,
                            MHD_OPTION_SOCK_ADDR, address,
                            MHD_OPTION_THREAD_POOL_SIZE, thread_pool_size,
                            MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_address_limit,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, connection_memory_limit,
                            MHD_OPTION_STRICT_FOR_CLIENT, (int) 1,
                            MHD_OPTION_URI_LOG_CALLBACK, target, context,
                            MHD_OPTION_NOTIFY_CONNECTION, connections, context,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, context,
                            MHD_OPTION_END);
}

/// `MHD_get_daemon_info` is variadic, which Swift cannot call: this returns
/// the port the daemon is bound to (0 if libmicrohttpd cannot tell).
static inline uint16_t daogate_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/// `MHD_get_connection_info` is variadic: this returns a connection's socket (-1 if libmicrohttpd cannot tell).
static inline int daogate_mhd_connection_socket(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/// `MHD_get_connection_info` is variadic: this returns what the connection
/// notification stored in the connection's `socket_context` (NULL if none).
static inline void *daogate_mhd_connection_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <microhttpd.h>
// libmicrohttpd's TLS is GnuTLS: its certificate callback speaks GnuTLS's types.
#include <gnutls/gnutls.h>
#include <gnutls/abstract.h>

/// glibc's `sched_getaffinity`, which its headers declare only under `_GNU_SOURCE` (not so for Swift's Glibc
/// module): the affinity mask of thread `pid` (0: the caller) into `mask`, `size` bytes. 0, or -1 with `errno`.
extern int daogate_sched_getaffinity(pid_t pid, size_t size, void *mask) __asm__("sched_getaffinity");

/// The callback libmicrohttpd calls with a request's target (path and query)
/// as the client sent it, before it cuts the query off and decodes the path;
/// what it returns becomes the request's `con_cls`.
typedef void *(*daogate_mhd_target_callback)(void *cls, const char *uri, struct MHD_Connection *connection);

/// GnuTLS's `gnutls_certificate_retrieve_function2`, as a pointer: called in each TLS handshake for the
/// certificate chain and private key to present (`MHD_OPTION_HTTPS_CERT_CALLBACK`).
typedef int (*daogate_tls_certificate_callback)(gnutls_session_t session, const gnutls_datum_t *requested_authorities,
                                                int authority_count, const gnutls_pk_algorithm_t *algorithms,
                                                int algorithm_count, gnutls_pcert_st **chain,
                                                unsigned int *chain_length, gnutls_privkey_t *key);

/// The options both daemons take, in `daogate_mhd_start_daemon`'s parameter names.
#define DAOGATE_MHD_COMMON_OPTIONS \
    MHD_OPTION_EXTERNAL_LOGGER, logger, context, \
    MHD_OPTION_SOCK_ADDR, address, \
    MHD_OPTION_THREAD_POOL_SIZE, thread_pool_size, \
    MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout, \
    MHD_OPTION_CONNECTION_LIMIT, connection_limit, \
    MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_address_limit, \
    MHD_OPTION_CONNECTION_MEMORY_LIMIT, connection_memory_limit, \
    MHD_OPTION_STRICT_FOR_CLIENT, (int) 1, \
    MHD_OPTION_URI_LOG_CALLBACK, target, context, \
    MHD_OPTION_NOTIFY_CONNECTION, connections, context, \
    MHD_OPTION_NOTIFY_COMPLETED, completed, context

/// `MHD_start_daemon` is variadic, which Swift cannot call: this wrapper passes
/// the transport's fixed list of options, each with the exact C type that
/// libmicrohttpd reads from the argument list (`unsigned int`, `int`,
/// `size_t`, pointers). The logger comes first, as libmicrohttpd asks, so that
/// start-up errors reach it too. One `context` serves as the closure of every
/// callback. `address` is what is bound; `port` only names the port in
/// libmicrohttpd's messages. `per_address_limit` 0 means no limit.
/// `MHD_OPTION_STRICT_FOR_CLIENT` 1 refuses an HTTP/1.1 request without
/// `Host` and a space in the request target.
///
/// With a `tls_certificate` callback the daemon speaks only TLS (`MHD_USE_TLS`),
/// with GnuTLS's `tls_priorities` (the protocol versions and ciphers allowed),
/// and asks the callback for its certificate at every handshake, so that the
/// certificate can be replaced while the daemon runs. libmicrohttpd reports an
/// HTTPS option given to a plain daemon, hence two calls.
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
    const char *tls_priorities,
    daogate_tls_certificate_callback tls_certificate,
    void *context)
{
    if (tls_certificate == NULL) {
        return MHD_start_daemon(flags, port, NULL, NULL, handler, context,
                                DAOGATE_MHD_COMMON_OPTIONS,
                                MHD_OPTION_END);
    }
    return MHD_start_daemon(flags | MHD_USE_TLS, port, NULL, NULL, handler, context,
                            DAOGATE_MHD_COMMON_OPTIONS,
                            MHD_OPTION_HTTPS_PRIORITIES, tls_priorities,
                            MHD_OPTION_HTTPS_CERT_CALLBACK, (gnutls_certificate_retrieve_function2 *) tls_certificate,
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

/// The listening socket of the daemon a TLS session belongs to, which names the daemon: libmicrohttpd sets each
/// session's pointer to its connection, whose daemon is one of the pool's workers (each a copy of the daemon
/// that was started, with its listening socket). `MHD_get_*_info` are variadic. -1 if it cannot tell.
static inline int daogate_mhd_session_listen_socket(gnutls_session_t session) {
    struct MHD_Connection *connection = (struct MHD_Connection *) gnutls_session_get_ptr(session);
    if (connection == NULL) return -1;
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_DAEMON);
    if (info == NULL || info->daemon == NULL) return -1;
    const union MHD_DaemonInfo *daemon = MHD_get_daemon_info(info->daemon, MHD_DAEMON_INFO_LISTEN_FD);
    return daemon == NULL ? -1 : daemon->listen_fd;
}

/// The listening socket of a daemon (-1 if it has none); `MHD_get_daemon_info` is variadic.
static inline int daogate_mhd_listen_socket(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_LISTEN_FD);
    return info == NULL ? -1 : info->listen_fd;
}

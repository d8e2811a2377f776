// Debian's libsqlite3 is built with the preupdate hook; its declaration needs this (Database+Hooks.swift).
#define SQLITE_ENABLE_PREUPDATE_HOOK 1
#include <sqlite3.h>

/// `sqlite3_db_config` is variadic, which Swift cannot call: this wrapper turns
/// off double-quoted string literals, so `"name"` is always an identifier.
static inline void daogate_sqlite_disable_dqs(sqlite3 *db) {
    sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DDL, 0, (void *)0);
    sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DML, 0, (void *)0);
}

/// `SQLITE_TRANSIENT` is a macro casting -1 to a function pointer, which Swift
/// cannot import: this returns it.
static inline sqlite3_destructor_type daogate_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}

/// `sqlite3_config` is variadic, which Swift cannot call: this turns off
/// SQLite's memory statistics, whose global mutex every allocation of every
/// connection would otherwise take, and which daogate never reads. It must
/// run before SQLite initializes; later it returns SQLITE_MISUSE and changes
/// nothing.
static inline int daogate_sqlite_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/// `sqlite3_config` is variadic, which Swift cannot call: this stops SQLite
/// from giving each connection a bulk allocation of page-cache slots
/// (SQLITE_DEFAULT_PCACHE_INITSZ, 20 pages) when it opens, so an idle open
/// file costs only the pages it holds. Must run before SQLite initializes.
static inline int daogate_sqlite_disable_bulk_page_cache(void) {
    return sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, 0);
}

/*
 * The floor of a PK select over HTTP: libmicrohttpd and SQLite with nothing
 * between them. It answers POST /dao/Demo/getItem-style requests (a body such
 * as [123]) with {"result":"<content>"} read by a prepared
 * `select content from demoTable where "index" = ?` on a WAL file with 1,000
 * rows (made at start), one connection and one statement per worker thread,
 * inside one read transaction kept open (as daogate keeps its read snapshot
 * while nothing is written), or in autocommit with `autocommit` (a read
 * transaction per lookup: SQLite locks the WAL index and checks the file's
 * name on each, system calls included). No routing, no headers read, no JSON parsed beyond the
 * digits, no access log: what any server must pay for this call on these two
 * libraries, to measure daogate's own cost against.
 *
 *   gcc -O2 bench/sqlite_server.c -lmicrohttpd -lsqlite3 -o sqlite_server
 *   sqlite_server PORT THREADS DATABASE [autocommit]
 *
 * Its daemon is started as bench/constant_server.c's (bench_daemon.h).
 */
#include "bench_daemon.h"
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *database_path;
static int kept_snapshot = 1;

struct request {
    char body[64];
    size_t length;
};

static __thread sqlite3 *database;
static __thread sqlite3_stmt *statement;

static int prepare(void)
{
    if (statement != NULL)
        return 1;
    if (sqlite3_open_v2(database_path, &database, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
        return 0;
    if (sqlite3_prepare_v3(database, "select content from demoTable where \"index\" = ?", -1,
                           SQLITE_PREPARE_PERSISTENT, &statement, NULL) != SQLITE_OK)
        return 0;
    /* Nothing writes while this server runs, so the snapshot never goes stale. */
    return kept_snapshot ? sqlite3_exec(database, "begin", NULL, NULL, NULL) == SQLITE_OK : 1;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *connection,
                              const char *url, const char *method,
                              const char *version, const char *upload_data,
                              size_t *upload_data_size, void **req_cls)
{
    (void)cls; (void)url; (void)version;
    struct request *request = *req_cls;
    if (request == NULL) {
        request = calloc(1, sizeof *request);
        if (request == NULL)
            return MHD_NO;
        *req_cls = request;
        return MHD_YES;
    }
    if (*upload_data_size != 0) {
        size_t room = sizeof request->body - 1 - request->length;
        size_t taken = *upload_data_size < room ? *upload_data_size : room;
        memcpy(request->body + request->length, upload_data, taken);
        request->length += taken;
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (strcmp(method, "GET") == 0) {  /* answers that it runs (bench/run waits for it so) */
        return answer_json(connection, MHD_HTTP_OK, "{}", 2);
    }
    static const char failed[] = "{\"code\":\"failed\"}";
    if (!prepare())
        return answer_json(connection, 500, failed, sizeof failed - 1);
    const char *digits = request->body[0] == '[' ? request->body + 1 : request->body;
    sqlite3_bind_int64(statement, 1, strtoll(digits, NULL, 10));
    if (sqlite3_step(statement) != SQLITE_ROW) {
        sqlite3_reset(statement);
        return answer_json(connection, 404, failed, sizeof failed - 1);
    }
    char out[512];
    size_t length = 0;
    memcpy(out, "{\"result\":\"", 11);
    length = 11;
    const unsigned char *content = sqlite3_column_text(statement, 0);
    for (; content != NULL && *content != 0 && length < sizeof out - 8; content++) {
        if (*content == '"' || *content == '\\')
            out[length++] = '\\';
        out[length++] = (char)*content;
    }
    sqlite3_reset(statement);
    memcpy(out + length, "\"}", 2);
    length += 2;
    return answer_json(connection, MHD_HTTP_OK, out, length);
}

static void completed(void *cls, struct MHD_Connection *connection, void **req_cls,
                      enum MHD_RequestTerminationCode code)
{
    (void)cls; (void)connection; (void)code;
    free(*req_cls);
    *req_cls = NULL;
}

static int seed(void)
{
    sqlite3 *db;
    if (sqlite3_open(database_path, &db) != SQLITE_OK)
        return 0;
    char *error = NULL;
    int ok = sqlite3_exec(db,
        "pragma journal_mode = wal; pragma synchronous = normal;"
        "create table if not exists demoTable (\"index\" integer primary key, content text);"
        "delete from demoTable;"
        "with recursive n(i) as (select 1 union all select i + 1 from n where i < 1000)"
        " insert into demoTable select i, 'content of row ' || i from n;",
        NULL, NULL, &error) == SQLITE_OK;
    if (!ok)
        fprintf(stderr, "%s\n", error);
    sqlite3_free(error);
    sqlite3_close(db);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc != 4 && !(argc == 5 && strcmp(argv[4], "autocommit") == 0)) {
        fprintf(stderr, "usage: %s PORT THREADS DATABASE [autocommit]\n", argv[0]);
        return 2;
    }
    kept_snapshot = argc == 4;
    int port = atoi(argv[1]);
    int threads = atoi(argv[2]);
    database_path = argv[3];
    if (port < 0 || port > 65535 || threads < 1) {
        fprintf(stderr, "usage: %s PORT THREADS DATABASE (PORT 0-65535, THREADS >= 1)\n", argv[0]);
        return 2;
    }
    if (!seed()) {
        fprintf(stderr, "cannot make %s\n", database_path);
        return 1;
    }

    return serve_until_signal(port, threads, answer, completed);
}

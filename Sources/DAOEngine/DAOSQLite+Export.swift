// The engine's callers (the storage layers, the gateway, the executables)
// get connections, statements and SQLite errors through the engine's API:
// they see the SQLite layer without importing it themselves.
@_exported import SQLiteDatabase

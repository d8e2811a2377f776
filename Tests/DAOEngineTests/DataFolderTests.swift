import DAOEngine
import Testing

/// The data folder's layout is written and read back by one type: every location's path parses back to it,
/// and a path no location has (outside the layout, `..`, a bad storage name, a name that is no user's file
/// name) parses to none.
@Suite struct DataFolderTests {
    static let locations: [DatabaseLocation] = [
        .common(storage: nil), .common(storage: "archive2"),
        .user(try! UserID("ann"), storage: nil), .user(try! UserID("Ann@example.com"), storage: nil),
        .user(try! UserID("ann"), storage: "s-1"), .file("shared/books.db"),
    ]

    @Test(arguments: locations)
    func everyLocationsPathReadsBackAsIt(_ location: DatabaseLocation) {
        let relative = DataFolder.relativePath(of: location)
        #expect(relative == location.relativePath)
        #expect(DataFolder.location(relativePath: relative) == location)
        #expect(DataFolder.isData(relativePath: relative))
        #expect(DataFolder(root: "/data/").path(of: location) == "/data/" + relative)
    }

    @Test(arguments: ["", "common", "users/p-ann", "users/p-ANN.db", "users/q-ann.db", "users/../common.db", "../common.db",
                      "users/p-ann.db/x", "storages/bad name/common.db", "storages/s/users/p-ann.txt", "storages//common.db",
                      "databases", "databases/../common.db", "shard/frozen-3", "archive/bucket-1/users/p-ann.db"])
    func aPathNoLocationHasReadsAsNone(_ relative: String) {
        #expect(DataFolder.location(relativePath: relative) == nil)
    }

    @Test func aShardsStateAndArchivesAreNotData() {
        let folder = DataFolder(root: "/data")
        #expect(folder.freezeMarker(bucket: 17) == "/data/shard/frozen-17")
        #expect(DataFolder.frozenBucket(marker: "frozen-17") == 17)
        #expect(DataFolder.frozenBucket(marker: "incoming") == nil)
        #expect(folder.incoming == "/data/shard/incoming")
        let user = DatabaseLocation.user(try! UserID("ann"), storage: nil)
        #expect(folder.archivedCopy(of: user, bucket: 3) == "/data/archive/bucket-3/users/p-ann.db")
        #expect(!DataFolder.isData(relativePath: "shard/incoming/x.db"))
        #expect(!DataFolder.isData(relativePath: "archive/bucket-3/users/p-ann.db"))
    }
}

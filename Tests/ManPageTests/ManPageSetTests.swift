import Testing

/// The pages as a set: they name themselves right and refer to each other.
@Suite("man/ as a whole")
struct ManPageSetTests {
    @Test("Each page's .Dt matches its file name", arguments: ManPage.siblings)
    func title(file: String) throws {
        let page = try ManPage(file)
        let dot = file.lastIndex(of: ".")!
        #expect(page.lines.contains(".Dt \(file[..<dot].uppercased()) \(file[file.index(after: dot)...])"))
        #expect(page.lines.contains(".Nm \(file[..<dot])"))
    }

    @Test("Each page's SEE ALSO names every other page, sorted by section", arguments: ManPage.siblings)
    func seeAlso(file: String) throws {
        let page = try ManPage(file)
        let others = ManPage.siblings.filter { $0 != file }.map(ManPage.reference(ofFile:))
        #expect(Set(page.seeAlso).isSuperset(of: others), "\(page.seeAlso)")
        #expect(!page.seeAlso.contains(page.reference))
        let sections = page.seeAlso.map { $0.split(separator: "(").last! }
        #expect(sections == sections.sorted(), "SEE ALSO goes by section")
    }

    @Test("Every page cited is a sibling or a known page of another package", arguments: ManPage.siblings)
    func citations(file: String) throws {
        let page = try ManPage(file)
        let known = Set(ManPage.siblings.map(ManPage.reference(ofFile:))).union(ManPage.externalReferences)
        for line in page.lines where line.hasPrefix(".Xr ") || line.contains(" Xr ") {
            let words = line.split(separator: " ")
            for index in words.indices.dropLast(2) where words[index] == "Xr" || words[index] == ".Xr" {
                #expect(known.contains("\(words[index + 1])(\(words[index + 2]))"), "\(file): \(line)")
            }
        }
    }
}

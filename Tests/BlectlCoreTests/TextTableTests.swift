import BlectlCore
import Testing

@Suite struct TextTableTests {
    let table = TextTable(
        columns: [.init("NAME"), .init("TEMP", .right), .init("AGE")],
        rows: [["nano-01", "21 °C", "3 s ago"], ["freezer-long", "-5 °C", "12 min ago"], ["x", "-", "-"]])

    @Test("Columns are as wide as their widest cell, right-aligned numbers line up, no trailing spaces")
    func render() {
        #expect(table.render() == [
            "NAME           TEMP  AGE",
            "nano-01       21 °C  3 s ago",
            "freezer-long  -5 °C  12 min ago",
            "x                 -  -",
        ])
    }

    @Test("Without the legend the header goes and widths follow the rows")
    func noLegend() {
        let small = TextTable(columns: [.init("ADDRESS"), .init("N", .right)], rows: [["a", "1"], ["bb", "10"]])
        #expect(small.render(legend: false) == ["a    1", "bb  10"])
    }

    @Test("Decoration applies to padded cells, so colour codes do not break alignment")
    func decorate() {
        let lines = table.render { row, column, cell in row == 1 && column == 1 ? "<\(cell)>" : cell }
        #expect(lines[2] == "freezer-long  <-5 °C>  12 min ago")
    }
}

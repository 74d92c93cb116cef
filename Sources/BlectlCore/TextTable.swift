/// A plain text table: a header row (the legend) and rows of cells, columns separated by
/// two spaces, each column as wide as its widest cell.
public struct TextTable: Sendable, Hashable {
    public enum Alignment: Sendable, Hashable {
        case left
        case right
    }

    public struct Column: Sendable, Hashable {
        public var title: String
        public var alignment: Alignment

        public init(_ title: String, _ alignment: Alignment = .left) {
            self.title = title
            self.alignment = alignment
        }
    }

    public var columns: [Column]
    public var rows: [[String]]

    public init(columns: [Column], rows: [[String]] = []) {
        self.columns = columns
        self.rows = rows
    }

    /// The table's lines, without trailing spaces. `legend` includes the header row.
    /// `decorate(row, column, paddedCell)` may wrap a padded cell (e.g. in colour); `row`
    /// is `nil` for the header.
    public func render(legend: Bool = true, decorate: (Int?, Int, String) -> String = { $2 }) -> [String] {
        var widths = columns.map { legend ? $0.title.count : 0 }
        for row in rows {
            for (column, cell) in row.enumerated() where column < widths.count {
                widths[column] = max(widths[column], cell.count)
            }
        }
        func line(_ cells: [String], row: Int?) -> String {
            var parts: [String] = []
            for (column, spec) in columns.enumerated() {
                let cell = column < cells.count ? cells[column] : ""
                let padding = String(repeating: " ", count: max(widths[column] - cell.count, 0))
                let isLast = column == columns.count - 1
                let padded: String
                switch spec.alignment {
                case .left: padded = isLast ? cell : cell + padding
                case .right: padded = padding + cell
                }
                parts.append(decorate(row, column, padded))
            }
            var text = parts.joined(separator: "  ")
            while text.hasSuffix(" ") { text.removeLast() }
            return text
        }
        var lines: [String] = []
        if legend { lines.append(line(columns.map(\.title), row: nil)) }
        for (index, row) in rows.enumerated() { lines.append(line(row, row: index)) }
        return lines
    }
}

import BlueZ
import Logging

/// One connect of a board, run as the board's connect task on the board's actor: where it goes (placement: the
/// adapter that hears it best and has room, ``FleetContext/placement(for:live:command:)``),
/// its turn in that adapter's queue (``FleetAdapter/connect(_:device:full:command:in:)``), and
/// what a failure means for the adapter; the board is told what came of it
/// (``Board/connectEnded(_:)``). It keeps nothing: the board cancels the task when it no
/// longer wants the connect.
struct BoardConnect: Sendable {
    /// What a connect came to.
    enum Result: Sendable {
        case connected(through: AdapterPath)
        /// Every slot it could use was taken, and nobody waited for the board: no `Connect`
        /// was called.
        case noSlot(adapter: AdapterPath)
        /// No adapter hears the board.
        case absent
        case failed(ConnectErrorClass, error: BlueZError, adapter: AdapterPath)
    }

    /// Whether a call waits for the board.
    let command: Bool
    let logger: Logger

    func run(for board: isolated Board) async {
        let context = board.context
        let address = board.address
        // The machine starts a connect only from a state without a link: none to keep.
        guard let choice = await context.placement(for: address, live: board.live, command: command) else {
            board.connectEnded(.absent)
            return
        }
        let adapter = choice.adapter
        defer { adapter.unclaim(address) }
        switch await adapter.connect(board, device: choice.device, full: choice.full, command: command, in: context) {
        case .connected:
            board.connectEnded(.connected(through: adapter.path))
        case .cancelled:
            return
        case .noSlot:
            board.connectEnded(.noSlot(adapter: adapter.path))
        case .failed(let error):
            let errorClass = ConnectErrorClass(error)
            if !Task.isCancelled {
                await adapter.connectFailed(address, device: choice.device, errorClass, in: context, logger: logger)
            }
            board.connectEnded(.failed(errorClass, error: error, adapter: adapter.path))
        }
    }
}

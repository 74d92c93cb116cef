import Logging

extension Logger.Metadata {
    /// The metadata a handler emits for one event, merged the way swift-log's own handlers do:
    /// the handler's metadata, overridden by the metadata provider's, overridden by the
    /// per-message metadata.
    static func effective(
        handler: Logger.Metadata, provider: Logger.MetadataProvider?, event: Logger.Metadata?
    ) -> Logger.Metadata {
        var merged = handler
        if let provided = provider?.get(), !provided.isEmpty {
            merged.merge(provided, uniquingKeysWith: { _, provided in provided })
        }
        if let event, !event.isEmpty {
            merged.merge(event, uniquingKeysWith: { _, event in event })
        }
        return merged
    }
}

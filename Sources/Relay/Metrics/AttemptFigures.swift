/// The measurements of an attempt's report, without its response or error: what an operation's ``CallMetrics`` keep
/// until the operation is forgotten, so that a large response body is not held twice.
struct AttemptFigures: Sendable {
    let httpStatus: Int?
    let bytesSent: Int?
    let bytesReceived: Int?
    let timeToResponseHeaders: Duration?
    let timeToEndOfBody: Duration?

    init(_ report: AttemptReport) {
        httpStatus = report.httpStatus
        bytesSent = report.bytesSent
        bytesReceived = report.bytesReceived
        timeToResponseHeaders = report.timeToResponseHeaders
        timeToEndOfBody = report.timeToEndOfBody
    }
}

import Foundation
import Relay

/// An event as one line of JSON, for `--json`, pipes and `relay events --follow`.
enum EventLine {
    static func json(_ event: CallEvent, call: String?) -> String {
        var object: [String: Any] = [
            "event": event.kind.name, "number": event.sequenceNumber,
            "time": event.date.formatted(.iso8601),
        ]
        object["operation"] = event.operationID?.uuidString.lowercased()
        object["call"] = call
        object["sequence"] = event.sequenceName?.rawValue
        switch event.kind.value {
        case .started(let attempt): object["attempt"] = attempt
        case .attemptEnded(let report):
            object["attempt"] = report.attempt
            object["status"] = report.httpStatus
            object["error"] = report.error
        case .completed(let metrics):
            object["seconds"] = metrics.runTime.seconds
            object["status"] = metrics.httpStatus
        case .retryScheduled(let attempt, let at, let reason):
            object["attempt"] = attempt
            object["retryAt"] = at.formatted(.iso8601)
            object["reason"] = reason
        case .failed(let failure, _):
            object["reason"] = failure.reason
            object["status"] = failure.response?.status
        case .cancelled(let reason, _): object["reason"] = reason.description
        case .offline(let destination, let reason), .online(let destination, let reason):
            object["destination"] = destination
            object["reason"] = reason
        case .suspended(let reason), .resumed(let reason): object["reason"] = reason
        case .dropped(let dropped): object["count"] = dropped.count
        default: break
        }
        return encode(object)
    }

    static func encode(_ object: [String: Any]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

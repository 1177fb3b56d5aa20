import Benchmark
import Foundation
import Measuring
import Relay
import RelayTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Glibc)
    import Glibc

    /// Download: the peak resident memory of the process while it downloads 200 MB from a loopback server.
    ///
    /// Through Relay from a server that serves byte ranges, as static file servers and object stores do, so Relay asks
    /// for the body in parts; through Relay from one that ignores them, so the body comes in one answer; and through
    /// a URLSession data delegate that writes each chunk to a file; one after the other in each iteration. The goal
    /// holds the first. Linux only: the peak is the kernel's high-water mark, reset before each download.
    func downloadBenchmark() {
        let size = 200_000_000
        let relayPeak = BenchmarkMetric.custom(
            "relayPeakResidentMB", polarity: .prefersSmaller, useScalingFactor: false)
        let wholePeak = BenchmarkMetric.custom(
            "relayWholeBodyPeakResidentMB", polarity: .prefersSmaller, useScalingFactor: false)
        let sessionPeak = BenchmarkMetric.custom(
            "sessionPeakResidentMB", polarity: .prefersSmaller, useScalingFactor: false)
        let configuration = Benchmark.Configuration(
            metrics: [relayPeak, wholePeak, sessionPeak], warmupIterations: 0, maxDuration: .seconds(60),
            maxIterations: 5)
        Benchmark("Download Relay 200 MB against URLSession data delegate", configuration: configuration) {
            benchmark in
            let server = try LoopbackServer()
            defer { server.stop() }
            server.setDefault("/large", LoopbackServer.Reply.zeros(count: size).servingRanges())
            server.setDefault("/whole", .zeros(count: size))
            let url = server.url("/large")
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("relay-p8-\(UUID())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let file = folder.appendingPathComponent("large.bin")

            let session = try await ResidentMemory.peak(during: {
                try await DelegateDownload.run(url, to: file, expecting: size)
            })
            benchmark.measurement(sessionPeak, session / 1_000_000)
            try FileManager.default.removeItem(at: file)
            for (source, metric) in [(url, relayPeak), (server.url("/whole"), wholePeak)] {
                let relay = try await ResidentMemory.peak(during: {
                    try await DataPoint.with(storage: .volatile) { point in
                        let call = HTTPCall(url: source, destination: file)
                        let handle = try await point.enqueue(CallOperation.http(call))
                        guard try await handle.response.status == 200,
                            (try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) == size
                        else { fatalError("the download did not complete") }
                    }
                })
                benchmark.measurement(metric, relay / 1_000_000)
                try FileManager.default.removeItem(at: file)
            }
        }
    }

    /// The baseline: FoundationNetworking alone, a data task whose delegate writes each chunk to a file.
    final class DelegateDownload: NSObject, URLSessionDataDelegate, Sendable {
        private let file: FileHandle
        private let done: @Sendable (Result<Void, any Error>) -> Void

        private init(file: FileHandle, done: @escaping @Sendable (Result<Void, any Error>) -> Void) {
            self.file = file
            self.done = done
        }

        static func run(_ url: URL, to destination: URL, expecting size: Int) async throws {
            guard FileManager.default.createFile(atPath: destination.path, contents: nil) else {
                fatalError("cannot create \(destination.path)")
            }
            let handle = try FileHandle(forWritingTo: destination)
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let delegate = DelegateDownload(file: handle) { continuation.resume(with: $0) }
                let session = URLSession(configuration: .default, delegate: delegate, delegateQueue: nil)
                session.dataTask(with: url).resume()
                session.finishTasksAndInvalidate()
            }
            try handle.close()
            guard (try FileManager.default.attributesOfItem(atPath: destination.path)[.size] as? Int) == size else {
                fatalError("the baseline download did not complete")
            }
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            file.write(data)
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            done(error.map { .failure($0) } ?? .success(()))
        }
    }
#else
    func downloadBenchmark() {}
#endif

// Reading back `mirrorlab-cli train --json` (core/train/event_reader.h), the way a front end follows
// a run in another process: every event type survives the round trip with the values a view
// shows, a real CLI run read in arbitrary pieces gives the same events as it printed, and what
// else shares the output (Open MPI's messages, a cut line) becomes text instead of an error.
#include <QProcess>
#include <QtTest>

#include <bit>
#include <cmath>

#include "core/train/event_reader.h"
#include "core/util/json.h"

#ifndef MIRRORLAB_CLI_PATH
#error "MIRRORLAB_CLI_PATH must name the mirrorlab-cli binary"
#endif

using namespace mirrorlab;

namespace {

Event round_trip(const Event& event) {
    EventLineReader reader;
    std::vector<Event> events = reader.feed(event_to_json(event) + "\n");
    if (events.size() != 1) qFatal("one line gave %zu events", events.size());
    return events.front();
}

template <typename T>
T round_trip_as(const T& event) {
    const Event back = round_trip(Event{event});
    if (!std::holds_alternative<T>(back)) qFatal("the event came back as another type");
    return std::get<T>(back);
}

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace

class EventReaderTest : public QObject {
    Q_OBJECT

private slots:
    void everyEventSurvivesTheRoundTrip() {
        TrainBeginEvent begin;
        begin.epochs = 10;
        begin.initial_epoch = 3;
        begin.steps_per_epoch = 281;
        begin.validation_steps = 71;
        begin.replicas = 4;
        begin.global_batch = 32;
        begin.devices = {"/job:worker/task:0/device:CPU:0", "/job:worker/task:1/device:CPU:0"};
        begin.strategy = "MultiWorkerMirroredStrategy";
        begin.all_reduce = "reduce_to_one_device";
        begin.parameters = 332856;
        const TrainBeginEvent b = round_trip_as(begin);
        QCOMPARE(b.epochs, 10);
        QCOMPARE(b.initial_epoch, 3);
        QCOMPARE(b.steps_per_epoch, std::int64_t{281});
        QCOMPARE(b.validation_steps, std::int64_t{71});
        QCOMPARE(b.replicas, 4);
        QCOMPARE(b.global_batch, 32);
        QCOMPARE(b.devices, begin.devices);
        QCOMPARE(b.strategy, begin.strategy);
        QCOMPARE(b.all_reduce, begin.all_reduce);
        QCOMPARE(b.parameters, std::int64_t{332856});

        StepEndEvent step;
        step.epoch = 2;
        step.step = 17;
        step.steps = 281;
        step.global_step = 298;
        step.running = Metrics{1.2345678901234567, 0.625, 0.90625};
        step.step_time_ms = 3.25;
        step.samples_per_second = 9846.15;
        step.allreduce_bytes_per_replica = 1455356;
        step.all_reduce = "ring";
        step.allreduce_bytes_total = 2910712;
        step.gradient_bytes = 1331424;
        step.allreduce_buffer_bytes = 1455356;
        PhaseTimings timing;
        timing.shard_size = 16;
        timing.forward_ms = 0.5;
        timing.backward_ms = 1.25;
        timing.allreduce_ms = 0.75;
        timing.update_ms = 0.375;
        timing.local_loss = 1.5;
        timing.update_begin_ms = 2.5;
        timing.grad_norm_before = 0.125;
        timing.weights_checksum = 0xfedcba9876543210ull;
        timing.device_timed = true;
        step.replicas = {timing, PhaseTimings{}};
        const StepEndEvent s = round_trip_as(step);
        QCOMPARE(s.global_step, std::int64_t{298});
        QCOMPARE(std::bit_cast<std::uint64_t>(s.running.loss), std::bit_cast<std::uint64_t>(step.running.loss));  // exact
        QCOMPARE(s.running.top5, 0.90625);
        QCOMPARE(s.all_reduce, std::string("ring"));
        QCOMPARE(s.allreduce_buffer_bytes, std::int64_t{1455356});
        QCOMPARE(s.replicas.size(), std::size_t{2});
        QCOMPARE(s.replicas[0].shard_size, 16);
        QCOMPARE(s.replicas[0].backward_ms, 1.25);
        QCOMPARE(s.replicas[0].update_begin_ms, 2.5);
        QCOMPARE(s.replicas[0].weights_checksum, 0xfedcba9876543210ull);
        QVERIFY(s.replicas[0].device_timed);
        QCOMPARE(s.replicas[0].grad_norm_before, 0.125);
        QVERIFY(std::isnan(s.replicas[0].grad_norm_after));  // not measured: NaN, written as null
        QCOMPARE(s.replicas[1].weights_checksum, std::uint64_t{0});

        EpochEndEvent epoch;
        epoch.epoch = 3;
        epoch.epochs = 10;
        epoch.steps = 281;
        epoch.train = Metrics{0.5, 0.875, 0.96875};
        epoch.validation = Metrics{1.521, 0.6625, 0.89};
        epoch.has_validation = true;
        epoch.epoch_seconds = 2.007;
        epoch.ms_per_step = 6.5;
        const EpochEndEvent e = round_trip_as(epoch);
        QVERIFY(e.has_validation);
        QCOMPARE(e.validation.loss, 1.521);
        QCOMPARE(e.train.accuracy, 0.875);
        QCOMPARE(e.epoch_seconds, 2.007);
        epoch.has_validation = false;
        QVERIFY(!round_trip_as(epoch).has_validation);

        MemoryEvent memory;
        memory.devices = {DeviceMemory{"/device:GPU:0", 1000, 2000, 1073741824, 5000}, DeviceMemory{"/device:CPU:0", 7, 8, 0, 0}};
        const MemoryEvent m = round_trip_as(memory);
        QCOMPARE(m.devices.size(), std::size_t{2});
        QCOMPARE(m.devices[0].limit_bytes, std::int64_t{1073741824});
        QCOMPARE(m.devices[0].physical_free_bytes, std::int64_t{5000});
        QCOMPARE(m.devices[1].device, std::string("/device:CPU:0"));

        const WarningEvent w = round_trip_as(WarningEvent{"overfitting", "val_loss rose for 2 epochs", 5, 3});
        QCOMPARE(w.code, std::string("overfitting"));
        QCOMPARE(w.best_epoch, 3);

        FinishedEvent finished;
        finished.reason = FinishReason::StoppedByUser;
        finished.epochs_completed = 4;
        finished.stop = StopPoint{StopPhase::Validation, 5, 281, 281, 12, 71};
        finished.text = "Stopped during epoch 5's validation";
        const FinishedEvent f = round_trip_as(finished);
        QCOMPARE(f.reason, FinishReason::StoppedByUser);
        QCOMPARE(f.stop.phase, StopPhase::Validation);
        QCOMPARE(f.stop.validation_step, std::int64_t{12});
        QCOMPARE(f.text, finished.text);

        const FailedEvent x = round_trip_as(FailedEvent{"nan_loss", "the loss became NaN at step 7", 2, 7});
        QCOMPARE(x.kind, std::string("nan_loss"));
        QCOMPARE(x.step, std::int64_t{7});
        QCOMPARE(round_trip_as(LogEvent{LogLevel::Warning, "a warning"}).level, LogLevel::Warning);
        QCOMPARE(round_trip_as(EpochBeginEvent{2, 10, 281}).steps, std::int64_t{281});
        QCOMPARE(round_trip_as(ValidationBeginEvent{2, 71}).steps, std::int64_t{71});
    }

    // What shares a worker's output is text; a line cut short or of a newer type is no error.
    void otherLinesBecomeText() {
        EventLineReader reader;
        const std::string input =
            "--------------------------------------------------------------------------\r\n"
            "mpirun noticed that process rank 1 with PID 4242 on node host exited on signal 9 (Killed).\n"
            "{\"type\": \"interrupted\", \"epoch\": 2}\n"
            "{\"type\": \"epoch_begin\", \"epoch\": \"two\"}\n"
            "{\"type\": \"log\", \"level\": \"error\", \"te\n"
            "\n"
            "{\"type\": \"failed\", \"kind\": \"cluster\", \"reason\": \"rank 1 was lost\"}";
        std::vector<Event> events;
        for (std::size_t i = 0; i < input.size(); i += 5) {  // in pieces, as a pipe delivers them
            for (Event& event : reader.feed(std::string_view(input).substr(i, 5))) events.push_back(std::move(event));
        }
        QCOMPARE(events.size(), std::size_t{4});  // the last line has no newline yet
        QCOMPARE(std::get<LogEvent>(events[0]).text, std::string(74, '-'));  // "\r" dropped
        QVERIFY(std::get<LogEvent>(events[1]).text.find("rank 1") != std::string::npos);
        QCOMPARE(std::get<EpochBeginEvent>(events[2]).epoch, 0);  // a mistyped field keeps its default
        QVERIFY(std::get<LogEvent>(events[3]).text.find("\"te") != std::string::npos);  // cut JSON: text
        QCOMPARE(reader.unknown_events(), std::size_t{1});                              // "interrupted"
        QCOMPARE(reader.text_lines(), std::size_t{3});
        const std::vector<Event> last = reader.finish();
        QCOMPARE(last.size(), std::size_t{1});
        QCOMPARE(std::get<FailedEvent>(last.front()).reason, std::string("rank 1 was lost"));
        QVERIFY(reader.finish().empty());
    }

    // A real run's --json output, read in 7-byte pieces: the events it printed, in order.
    void readsARealRun() {
        QProcess cli;
        cli.start(QStringLiteral(MIRRORLAB_CLI_PATH),
                  {"train", "--devices", "cpu:2", "--epochs", "2", "--steps-per-epoch", "5", "--data", "synthetic:320:64",
                   "--no-store", "--json"});
        QVERIFY(cli.waitForFinished(120000));
        QCOMPARE(cli.exitCode(), 0);
        const QByteArray out = cli.readAllStandardOutput();
        EventLineReader reader;
        std::vector<Event> events;
        for (qsizetype i = 0; i < out.size(); i += 7) {
            for (Event& event : reader.feed(std::string_view(out.constData() + i, std::min<qsizetype>(7, out.size() - i))))
                events.push_back(std::move(event));
        }
        for (Event& event : reader.finish()) events.push_back(std::move(event));
        QCOMPARE(reader.text_lines(), std::size_t{0});
        int begins = 0, steps = 0, epochs = 0, finished = 0;
        double last_loss = 0.0;
        for (const Event& event : events) {
            if (const auto* begin = std::get_if<TrainBeginEvent>(&event)) {
                ++begins;
                QCOMPARE(begin->replicas, 2);
                QCOMPARE(begin->devices.size(), std::size_t{2});
            }
            if (const auto* step = std::get_if<StepEndEvent>(&event)) {
                ++steps;
                QCOMPARE(step->replicas.size(), std::size_t{2});
                QCOMPARE(step->replicas[0].shard_size + step->replicas[1].shard_size, 32);
            }
            if (const auto* end = std::get_if<EpochEndEvent>(&event)) {
                ++epochs;
                QVERIFY(end->has_validation);
                last_loss = end->train.loss;
            }
            if (std::holds_alternative<FinishedEvent>(event)) ++finished;
        }
        QCOMPARE(begins, 1);
        QCOMPARE(steps, 10);
        QCOMPARE(epochs, 2);
        QCOMPARE(finished, 1);
        // The values are the printed ones, digit for digit.
        const QList<QByteArray> lines = out.split('\n');
        QByteArray last_epoch;
        for (const QByteArray& line : lines) {
            if (line.contains("\"epoch_end\"")) last_epoch = line;
        }
        const json::Value printed = json::parse(last_epoch.toStdString());
        QVERIFY(same(printed.at("loss").as_double(), last_loss));
    }
};

QTEST_GUILESS_MAIN(EventReaderTest)
#include "test_event_reader.moc"

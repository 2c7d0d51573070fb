// Seeing data parallelism: the step view and the timeline driven by real 2- and 3-replica runs
// (shard sizes, the stage sequence, identical replica checksums, one timeline lane per replica),
// slow motion (exactly one more step per "Next step"), the scaling panel's experiment, table and
// CSV, and the three panels in the main window. With MIRRORLAB_SCREENSHOT_DIR set it also saves
// the README's pictures of the step view, the timeline and the scaling panel there.
#include <QtTest>

#include <QApplication>
#include <QChart>
#include <QCheckBox>
#include <QDockWidget>
#include <QPushButton>
#include <QSettings>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QThread>

#include <functional>

#include "core/data/source.h"
#include "core/data/synthetic.h"
#include "core/device/device.h"
#include "core/model/model.h"
#include "ui/common/translation.h"
#include "ui/main_window.h"
#include "ui/common/format.h"
#include "ui/teaching/scaling_panel.h"
#include "ui/teaching/step_diagram.h"
#include "ui/teaching/what_if_panel.h"
#include "ui/teaching/step_view.h"
#include "ui/teaching/timeline_view.h"
#include "ui/training/training_controller.h"

using namespace mirrorlab;
using namespace mirrorlab::ui;
using Stage = StepView::Stage;

namespace {

constexpr std::int32_t kVocabulary = 2000;

std::shared_ptr<const Model> small_model() {
    return std::make_shared<const Model>(Model::from_json_text(
        "{\"name\": \"small\", \"input_length\": 60, \"layers\": ["
        "{\"class_name\": \"Embedding\", \"config\": {\"input_dim\": 2000, \"output_dim\": 8}},"
        "{\"class_name\": \"Conv1D\", \"config\": {\"filters\": 16, \"kernel_size\": 5, \"activation\": \"relu\"}},"
        "{\"class_name\": \"GlobalMaxPooling1D\", \"config\": {}},"
        "{\"class_name\": \"Dense\", \"config\": {\"units\": 46, \"activation\": \"softmax\"}}]}",
        "small model"));
}

std::shared_ptr<const DatasetSplit> small_data(std::int32_t vocabulary = kVocabulary, std::int32_t samples = 320) {
    SyntheticReutersOptions options;
    options.train_samples = samples;
    options.validation_samples = 64;
    options.vocabulary_size = vocabulary;
    return std::make_shared<const DatasetSplit>(make_synthetic_reuters(options));
}

RunSettings run_settings(const char* devices, std::int64_t steps, std::shared_ptr<const Model> model = small_model(),
                         std::shared_ptr<const DatasetSplit> data = small_data()) {
    RunSettings settings;
    settings.model = std::move(model);
    settings.devices = DeviceConfig::parse(devices);
    settings.config.epochs = 1;
    settings.config.batch_size = 32;
    settings.config.seed = 3;
    settings.config.optimizer = OptimizerConfig::defaults(OptimizerKind::Adam);
    settings.config.optimizer.learning_rate = 0.01;
    settings.config.max_steps_per_epoch = steps;
    settings.config.prefetch_batches = 1;
    settings.config.detailed_step_stats = true;
    settings.data = std::move(data);
    settings.data_name = QStringLiteral("synthetic");
    return settings;
}

const std::vector<Stage> kMirroredStages = {Stage::CopyModel, Stage::SplitBatch, Stage::LocalGradients,
                                            Stage::AllReduce, Stage::Update,     Stage::WaitForEveryone};

// Watches the step on show light up and returns the stages in the order they became current.
std::vector<Stage> watch_stages(const StepView& view, int timeout_ms) {
    std::vector<Stage> seen;
    QElapsedTimer timer;
    timer.start();
    while (timer.elapsed() < timeout_ms) {
        const Stage stage = view.currentStage();
        if (stage != Stage::Invalid && (seen.empty() || seen.back() != stage)) seen.push_back(stage);
        if (view.playedStages().size() == view.stageSequence().size() && !seen.empty() && seen.back() == view.stageSequence().back()) break;
        QTest::qWait(2);
    }
    return seen;
}

// Polls every 2 ms (QTRY_* polls every 50 ms, too coarse to see a stage light up).
bool wait_for(const std::function<bool()>& condition, int timeout_ms) {
    QElapsedTimer timer;
    timer.start();
    while (!condition()) {
        if (timer.elapsed() > timeout_ms) return false;
        QTest::qWait(2);
    }
    return true;
}

QString screenshot_dir() { return qEnvironmentVariable("MIRRORLAB_SCREENSHOT_DIR"); }

}  // namespace

class TestStepView : public QObject {
    Q_OBJECT
private slots:
    void realRuns_data() {
        QTest::addColumn<QString>("devices");
        QTest::addColumn<QList<int>>("shards");
        QTest::addColumn<QString>("allReduce");
        // Replicas on one CPU reduce to one device by default (as TensorFlow does for virtual
        // GPUs); the ring is asked for explicitly.
        QTest::newRow("2 replicas, ring") << "cpu:2" << QList<int>{16, 16} << "ring";
        QTest::newRow("3 virtual replicas, reduce") << "cpu:3x256MB" << QList<int>{11, 11, 10} << "reduce_to_one_device";
    }
    void realRuns() {
        QFETCH(QString, devices);
        QFETCH(QList<int>, shards);
        QFETCH(QString, allReduce);
        TrainingController controller;
        StepView view(&controller);
        TimelineView timeline(&controller);
        view.resize(1100, 700);
        timeline.resize(1100, 260);
        view.show();
        timeline.show();
        view.setStageIntervalMs(15);
        RunSettings settings = run_settings(devices.toStdString().c_str(), 5);
        settings.config.all_reduce = all_reduce_from_name(allReduce.toStdString());
        controller.start(settings);
        QVERIFY(controller.waitForFinished(60000));
        QVERIFY(controller.currentRun()->finished.has_value());

        QCOMPARE(view.stepsSeen(), std::int64_t{5});
        std::vector<std::int32_t> expected;
        for (int s : shards) expected.push_back(s);
        QCOMPARE(view.shardSizes(), expected);
        QCOMPARE(view.runInfo().replicas, static_cast<int>(shards.size()));
        QCOMPARE(QString::fromStdString(view.shownStep()->all_reduce), allReduce);
        QCOMPARE(view.stageSequence(), kMirroredStages);
        QTRY_COMPARE_WITH_TIMEOUT(view.playedStages(), kMirroredStages, 5000);
        QCOMPARE(view.currentStage(), Stage::WaitForEveryone);

        // The replicas' variables after the update: bit-identical.
        const auto sums = view.checksums();
        QCOMPARE(sums.size(), static_cast<std::size_t>(shards.size()));
        QVERIFY(sums.front() != 0);
        for (std::uint64_t sum : sums) QCOMPARE(sum, sums.front());
        QVERIFY(view.checksumsIdentical());
        QVERIFY(view.checksumBadgeText().contains(QStringLiteral("identical")));
        for (const PhaseTimings& r : view.shownStep()->replicas) {
            QVERIFY(r.grad_norm_after > 0);
            QCOMPARE(r.grad_norm_after, view.shownStep()->replicas[0].grad_norm_after);
        }
        QTRY_VERIFY2_WITH_TIMEOUT(view.statusText().contains(QStringLiteral("Step 5")), qPrintable(view.statusText()), 5000);
        QVERIFY(!view.grab().isNull());

        // One lane per replica, each with forward, backward, all-reduce and update bars.
        QCOMPARE(timeline.laneCount(), static_cast<int>(shards.size()));
        QCOMPARE(timeline.stepCount(), 5);
        const QStringList lanes = timeline.laneNames();
        for (int i = 0; i < lanes.size(); ++i) QVERIFY2(lanes[i].contains(QStringLiteral("/device:CPU:%1").arg(i)), qPrintable(lanes[i]));
        const auto bars = timeline.bars();
        for (int lane = 0; lane < timeline.laneCount(); ++lane) {
            for (auto phase : {TimelineView::Phase::Forward, TimelineView::Phase::Backward, TimelineView::Phase::AllReduce,
                               TimelineView::Phase::Update}) {
                const auto count = std::count_if(bars.begin(), bars.end(), [&](const TimelineView::Bar& b) { return b.lane == lane && b.phase == phase; });
                QCOMPARE(count, 5);  // one per step
            }
        }
        // Bars of later steps lie further right; a lane's bars stay in its lane.
        const TimelineView::Bar* first_update = nullptr;
        const TimelineView::Bar* last_forward = nullptr;
        for (const auto& b : bars) {
            if (b.lane != 0) continue;
            if (b.phase == TimelineView::Phase::Update && first_update == nullptr) first_update = &b;
            if (b.phase == TimelineView::Phase::Forward) last_forward = &b;
        }
        QVERIFY(first_update != nullptr && last_forward != nullptr);
        QVERIFY(last_forward->rect.left() > first_update->rect.left());
        const TimelineView::Bar* widest_allreduce = nullptr;
        for (const auto& b : bars) {
            if (b.phase == TimelineView::Phase::AllReduce && (widest_allreduce == nullptr || b.rect.width() > widest_allreduce->rect.width())) {
                widest_allreduce = &b;
            }
        }
        QVERIFY(widest_allreduce != nullptr);
        const QString tip = timeline.toolTipAt(widest_allreduce->rect.center().toPoint());
        QVERIFY2(tip.contains(QStringLiteral("all-reduce")) && tip.contains(QStringLiteral("ms")), qPrintable(tip));
        QVERIFY(tip.contains(QStringLiteral("Step %1").arg(widest_allreduce->step)));
        QVERIFY(timeline.toolTipAt(QPoint(1, 1)).isEmpty());
    }

    void oneReplicaHasNoAllReduce() {
        TrainingController controller;
        StepView view(&controller);
        view.setStageIntervalMs(5);
        controller.start(run_settings("cpu", 2));
        QVERIFY(controller.waitForFinished(60000));
        QCOMPARE(view.shardSizes(), std::vector<std::int32_t>{32});
        QCOMPARE(view.stageSequence(), (std::vector<Stage>{Stage::CopyModel, Stage::SplitBatch, Stage::LocalGradients, Stage::Update}));
        QVERIFY(view.checksumsIdentical());
    }

    // Hovering the middle of a narrow bar names that bar, not the 1 px update drawn right after it
    // (the tooltip's 2 px of slack for thin bars once took it: "update" over a 3 px all-reduce).
    void tooltipNamesTheBarUnderTheMouse() {
        TimelineView timeline(nullptr);
        timeline.resize(800, 200);
        TrainBeginEvent begin;
        begin.replicas = 2;
        begin.devices = {"/device:CPU:0", "/device:CPU:1"};
        timeline.setRunInfo(begin);
        StepEndEvent step;
        step.step = step.global_step = 1;
        step.step_time_ms = 10.0;
        for (int r = 0; r < 2; ++r) {
            PhaseTimings t;
            t.forward_ms = 3.0;
            t.backward_ms = 6.0;
            t.allreduce_begin_ms = 9.0;
            t.allreduce_ms = 0.04;  // about 3 px at this width
            t.update_begin_ms = 9.04;
            t.update_ms = 0.01;  // drawn 1 px wide
            step.replicas.push_back(t);
        }
        timeline.addSteps({step});
        const auto bars = timeline.bars();
        const auto lane0 = [&](TimelineView::Phase phase) {
            return std::find_if(bars.begin(), bars.end(),
                                [&](const TimelineView::Bar& b) { return b.lane == 0 && b.phase == phase; });
        };
        const auto all_reduce = lane0(TimelineView::Phase::AllReduce), update = lane0(TimelineView::Phase::Update);
        QVERIFY(all_reduce != bars.end() && update != bars.end());
        const QPoint middle = all_reduce->rect.center().toPoint();
        // The case itself: the update's bar, widened by the slack, reaches the all-reduce's middle.
        QVERIFY(update->rect.adjusted(-2, 0, 2, 0).contains(middle));
        const auto expect_tip = [&](const QPoint& at, const char* phase) {
            const QString tip = timeline.toolTipAt(at);
            QVERIFY2(tip.contains(QLatin1String(phase)), qPrintable(tip));
        };
        expect_tip(middle, "all-reduce");
        const QPoint on_update = update->rect.center().toPoint();
        expect_tip(on_update, "update");
        // Just past the update's right edge, within the slack: still the update.
        expect_tip(QPoint(static_cast<int>(update->rect.right()) + 1, on_update.y()), "update");
    }

    // NCCL (a GPU-only path) is drawn from the event alone; replicas that differ get the red badge.
    void ncclAndDifferingReplicasAreShown() {
        StepView view(nullptr);
        view.resize(1100, 700);
        TrainBeginEvent begin;
        begin.replicas = 2;
        begin.global_batch = 32;
        begin.parameters = 332856;
        begin.devices = {"/device:GPU:0", "/device:GPU:1"};
        begin.all_reduce = "nccl";
        view.setRunInfo(begin);
        StepEndEvent step;
        step.epoch = 1;
        step.step = step.global_step = 1;
        step.steps = 10;
        step.all_reduce = "nccl";
        step.gradient_bytes = 332856 * 4;
        step.allreduce_bytes_total = 2 * step.gradient_bytes;
        step.allreduce_bytes_per_replica = step.gradient_bytes;
        for (int r = 0; r < 2; ++r) {
            PhaseTimings t;
            t.shard_size = 16;
            t.forward_ms = 1.0;
            t.backward_ms = 2.0 + r;
            t.allreduce_ms = 0.5;
            t.update_ms = 0.2;
            t.local_loss = 3.8;
            t.grad_norm_before = 0.3;
            t.grad_norm_after = 0.55;
            t.weights_checksum = 0x1234 + static_cast<std::uint64_t>(r);
            step.replicas.push_back(t);
        }
        view.addSteps({step});
        QCOMPARE(view.stageSequence(), kMirroredStages);
        view.showStage(Stage::AllReduce);
        QCOMPARE(view.playedStages().size(), std::size_t{4});
        QCOMPARE(view.currentStage(), Stage::AllReduce);
        QVERIFY(!view.checksumsIdentical());
        QVERIFY(view.checksumBadgeText().contains(QStringLiteral("differ")));
        const QImage image = view.grab().toImage();
        QVERIFY(!image.isNull());
        if (!screenshot_dir().isEmpty()) image.save(screenshot_dir() + QStringLiteral("/step_view_nccl.png"));
    }

    // A multi-worker job (followed from rank 0's events): the exchange is drawn in two levels and
    // its caption says what each level moves.
    void workersExchangeInTwoLevels() {
        StepView view(nullptr);
        view.resize(1100, 700);
        TrainBeginEvent begin;
        begin.replicas = 4;
        begin.global_batch = 32;
        begin.parameters = 332856;
        begin.devices = {"/job:worker/task:0/device:CPU:0", "/job:worker/task:0/device:CPU:1",
                         "/job:worker/task:1/device:CPU:0", "/job:worker/task:1/device:CPU:1"};
        begin.all_reduce = "reduce_to_one_device";
        view.setRunInfo(begin);
        const std::vector<int> workers = StepDiagram::workerOfReplicas(begin);
        QCOMPARE(workers, (std::vector<int>{0, 0, 1, 1}));
        StepEndEvent step;
        step.epoch = 1;
        step.step = step.global_step = 1;
        step.steps = 10;
        step.all_reduce = "reduce_to_one_device";
        step.gradient_bytes = 332856 * 4;
        step.allreduce_buffer_bytes = 1455356;
        step.allreduce_bytes_total = 4 * 1 * step.gradient_bytes;
        for (int r = 0; r < 4; ++r) {
            PhaseTimings t;
            t.shard_size = 8;
            t.forward_ms = 1.0;
            t.backward_ms = 2.0;
            t.allreduce_ms = 0.5;
            step.replicas.push_back(t);
        }
        const QString caption = StepDiagram::workersCaption(step, workers);
        QVERIFY2(caption.contains(QStringLiteral("2 workers")) && caption.contains(QStringLiteral("MPI_Allgather")) &&
                     caption.contains(bytes_text(1455356)) && caption.contains(bytes_text(2 * 1455356)) &&
                     caption.contains(QStringLiteral("all 4")),
                 qPrintable(caption));
        view.addSteps({step});
        view.showStage(Stage::AllReduce);
        QVERIFY(!view.grab().isNull());
        if (!screenshot_dir().isEmpty()) view.grab().save(screenshot_dir() + QStringLiteral("/step_view_workers.png"));
        // One process (or one worker): the usual picture.
        begin.devices = {"/device:CPU:0", "/device:CPU:1"};
        QVERIFY(StepDiagram::workerOfReplicas(begin).empty());
        begin.devices = {"/job:worker/task:0/device:CPU:0", "/job:worker/task:0/device:CPU:1"};
        QVERIFY(StepDiagram::workerOfReplicas(begin).empty());
    }

    void slowMotionRunsOneStepAtATime() {
        TrainingController controller;
        StepView view(&controller);
        view.show();
        view.setStageIntervalMs(10);
        view.setSlowMotion(true);
        // A GUI thread slow to see the run start (a busy machine took it from this one, once) must
        // not let the engine run ahead: it holds after the first step whatever this thread does.
        const QMetaObject::Connection slow_gui =
            connect(&controller, &TrainingController::stateChanged, &controller, [] { QThread::msleep(300); });
        controller.start(run_settings("cpu:2", 6));
        disconnect(slow_gui);
        QTRY_VERIFY_WITH_TIMEOUT(view.stepsSeen() >= 1, 30000);
        QTest::qWait(500);
        const std::int64_t held = view.stepsSeen();
        QCOMPARE(held, std::int64_t{1});  // the engine holds after the first step
        QTest::qWait(400);
        QCOMPARE(view.stepsSeen(), held);
        QCOMPARE(controller.state(), TrainingController::State::Paused);
        QVERIFY(view.statusText().contains(QStringLiteral("Next step")));

        // The stages of the held step light up in order.
        const std::vector<Stage> lit = watch_stages(view, 5000);
        QCOMPARE(lit.back(), Stage::WaitForEveryone);
        QVERIFY(std::is_sorted(lit.begin(), lit.end()));

        view.setStageIntervalMs(250);
        for (int round = 1; round <= 2; ++round) {
            QVERIFY(view.nextStepButton()->isEnabled());
            QTest::mouseClick(view.nextStepButton(), Qt::LeftButton);
            QVERIFY(wait_for([&] { return view.stepsSeen() >= held + round; }, 30000));
            // A new step starts from the first stage and lights the six in order.
            QCOMPARE(watch_stages(view, 5000), kMirroredStages);
            QTest::qWait(400);
            QCOMPARE(view.stepsSeen(), held + round);  // exactly one more
            QCOMPARE(view.shownStep()->global_step, held + round);
            QVERIFY(view.checksumsIdentical());
        }

        // Slow motion off: the run goes on to its end.
        view.slowMotionBox()->setChecked(false);
        QVERIFY(controller.waitForFinished(60000));
        QCOMPARE(view.stepsSeen(), std::int64_t{6});
    }

    void resumingFromTheToolbarEndsSlowMotion() {
        TrainingController controller;
        StepView view(&controller);
        view.setSlowMotion(true);
        controller.start(run_settings("cpu:2", 4));
        QTRY_VERIFY_WITH_TIMEOUT(view.stepsSeen() >= 1, 30000);
        controller.resume();
        QVERIFY(!view.slowMotion());
        QVERIFY(controller.waitForFinished(60000));
        QCOMPARE(view.stepsSeen(), std::int64_t{4});
    }

    // The "What if" tab: calibrated by the experiment, it predicts clusters that are not here, and
    // the efficiency chart draws the model beside the measured points.
    void scalingPanelPredictsClustersNotHere() {
        ScalingPanel panel;
        panel.resize(1400, 800);
        panel.show();
        WhatIfPanel* what_if = panel.whatIf();
        QVERIFY(!what_if->calibrated());
        QVERIFY2(what_if->statusText().contains(QStringLiteral("Run a scaling experiment")), qPrintable(what_if->statusText()));
        QCOMPARE(what_if->tableRowCount(), 0);

        ScalingSetup s;
        s.model = *small_model();
        s.data = make_train_data(*small_data(), 60);
        s.devices = DeviceConfig::parse("cpu:2");
        s.config.batch_size = 32;
        s.config.seed = 9;
        s.config.prefetch_batches = 1;
        s.warmup_steps = 1;
        panel.setMaxReplicas(2);
        panel.setSteps(4);
        QVERIFY(panel.start(s));
        QVERIFY(panel.waitForFinished(60000));
        QVERIFY2(what_if->calibrated(), qPrintable(what_if->statusText()));
        QVERIFY2(what_if->statusText().contains(QStringLiteral("scaling experiment 1")), qPrintable(what_if->statusText()));
        // Up to 8 workers of one device, global batch 32: 1, 2, 3, 4, 6, 8 workers.
        QCOMPARE(what_if->tableRowCount(), 6);
        const auto& rows = what_if->predictions();
        QCOMPARE(rows.front().shape.workers, 1);
        QVERIFY(std::abs(rows.front().efficiency - 1.0) < 1e-9);
        QCOMPARE(rows.back().shape.workers, 8);
        QCOMPARE(rows.back().per_device_batch, std::int64_t{4});
        QVERIFY(rows.back().inter_all_reduce_ms > 0.0);
        QStringList names;
        for (QAbstractSeries* series : panel.efficiencyChart()->series()) names << series->name();
        QVERIFY2(names.contains(QStringLiteral("model, one process")), qPrintable(names.join(", ")));
        QVERIFY2(names.filter(QStringLiteral("what if")).size() == 1, qPrintable(names.join(", ")));

        // A slower link between the workers: the 8-worker row scales worse.
        QVERIFY(what_if->setLink(QStringLiteral("NVLink 4")));
        const double fast = what_if->predictions().back().efficiency;
        QVERIFY(what_if->setLink(QStringLiteral("1 GbE")));
        QVERIFY(what_if->predictions().back().efficiency < fast);
        QVERIFY(!what_if->setLink(QStringLiteral("carrier pigeon")));
        // Workers that would get no sample are not offered: 4 devices each, global batch 8.
        what_if->setDevicesPerWorker(4);
        what_if->setGlobalBatch(8);
        QCOMPARE(what_if->tableRowCount(), 2);

        // Bench results: a wrong file is named and changes nothing; a multi-worker result adds the
        // measured link and selects it.
        QTemporaryDir dir;
        const QString wrong = dir.filePath(QStringLiteral("model.json"));
        QFile wrong_file(wrong);
        QVERIFY(wrong_file.open(QIODevice::WriteOnly));
        wrong_file.write(R"({"name": "a model"})");
        wrong_file.close();
        QString error;
        QVERIFY(!what_if->addBenchResults({wrong}, &error));
        QVERIFY2(error.contains(QStringLiteral("model.json")) && error.contains(QStringLiteral("not a bench result")), qPrintable(error));
        QVERIFY(what_if->calibrated());
        const QString probe = dir.filePath(QStringLiteral("two.json"));
        QFile probe_file(probe);
        QVERIFY(probe_file.open(QIODevice::WriteOnly));
        probe_file.write(R"({"workers": 2, "run": {"replicas": 2, "allreduce_buffer_bytes": 1455356}, "link_probe": {"samples": [)"
                         R"({"bytes_per_worker": 8, "participants": 2, "seconds": 0.000003},)"
                         R"({"bytes_per_worker": 1048576, "participants": 2, "seconds": 0.000213}]}})");
        probe_file.close();
        QVERIFY2(what_if->addBenchResults({probe}, &error), qPrintable(error));
        QCOMPARE(what_if->linkName(), QStringLiteral("measured"));
        QVERIFY(what_if->calibration().measured_link.has_value());
    }

    void scalingPanelRunsAndComparesExperiments() {
        ScalingPanel panel;
        panel.resize(1400, 800);
        panel.show();
        auto setup = [](const char* devices) {
            ScalingSetup s;
            s.model = *small_model();
            s.data = make_train_data(*small_data(), 60);
            s.devices = DeviceConfig::parse(devices);
            s.config.batch_size = 32;
            s.config.seed = 9;
            s.config.prefetch_batches = 1;
            s.warmup_steps = 1;
            return s;
        };
        QVERIFY(!panel.start());  // no provider: nothing to measure, and it says so
        QVERIFY(!panel.statusText().isEmpty());
        panel.setMaxReplicas(2);
        panel.setSteps(3);
        QVERIFY(panel.start(setup("cpu:2")));
        QVERIFY(panel.running());
        QVERIFY(panel.waitForFinished(60000));
        QCOMPARE(panel.experiments().size(), std::size_t{1});
        QCOMPARE(panel.tableRowCount(), 2);
        QVERIFY(panel.statusText().contains(QStringLiteral("finished")));
        QVERIFY(panel.throughputChart()->series().size() >= 2);  // the experiment and the ideal line
        QCOMPARE(panel.stepTimeChart()->series().size(), 1);
        QVERIFY(panel.efficiencyChart()->series().size() >= 2);
        QVERIFY(panel.explanationText().contains(QStringLiteral("16 + 16")));
        QVERIFY(panel.explanationText().contains(QStringLiteral("learning rate")));

        panel.setSteps(2);
        QVERIFY(panel.start(setup("cpu:2x256MB")));
        QVERIFY(panel.waitForFinished(60000));
        QCOMPARE(panel.experiments().size(), std::size_t{2});
        QCOMPARE(panel.tableRowCount(), 4);  // the earlier experiment stays for comparison
        QCOMPARE(panel.throughputChart()->series().size(), 3);

        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("scaling.csv"));
        QString error;
        QVERIFY2(panel.exportCsv(path, &error), qPrintable(error));
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadOnly | QIODevice::Text));
        const QStringList lines = QString::fromUtf8(file.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 5);
        QCOMPARE(lines[0], QString::fromLatin1(kScalingCsvHeader));

        panel.clearEarlier();
        QCOMPARE(panel.tableRowCount(), 2);
    }

    void mainWindowHasTheThreePanels() {
        const QString scope = QStringLiteral("MirrorLab-test-steps-%1").arg(QCoreApplication::applicationPid());
        {
            MainWindow window(nullptr, scope);
            QVERIFY(window.stepView() != nullptr);
            QVERIFY(window.timelineView() != nullptr);
            QVERIFY(window.scalingPanel() != nullptr);
            QStringList docks;
            for (auto* dock : window.findChildren<QDockWidget*>()) docks << dock->objectName();
            for (const char* name : {"stepViewDock", "timelineDock", "scalingDock"}) QVERIFY2(docks.contains(QLatin1String(name)), name);
        }
        QSettings(QStringLiteral("MirrorLab"), scope).clear();
    }

    // Not a check: the README's pictures, when asked for.
    void screenshots() {
        const QString dir = screenshot_dir();
        if (dir.isEmpty()) QSKIP("set MIRRORLAB_SCREENSHOT_DIR to save the README's screenshots");
        // MIRRORLAB_SCREENSHOT_LANGUAGE=zh_CN takes them in Chinese (to check that the texts fit).
        installTranslation(qEnvironmentVariable("MIRRORLAB_SCREENSHOT_LANGUAGE", QStringLiteral("en")));
        // The tutorial's model on synthetic wires, two replicas on the CPU, a real run.
        auto model = std::make_shared<const Model>(Model::reference());
        TrainingController controller;
        StepView view(&controller);
        TimelineView timeline(&controller);
        view.resize(1240, 760);
        timeline.resize(1240, timeline.sizeHint().height());
        view.show();
        timeline.show();
        controller.start(run_settings("cpu:2x512MB", 12, model, small_data(30982, 640)));
        QVERIFY(controller.waitForFinished(120000));
        view.showStage(Stage::AllReduce);
        QTest::qWait(100);
        QVERIFY(view.grab().save(dir + QStringLiteral("/step_view.png")));
        QVERIFY(timeline.grab().save(dir + QStringLiteral("/timeline.png")));

        TrainingController ring_controller;
        StepView ring_view(&ring_controller);
        ring_view.resize(1240, 760);
        ring_view.show();
        RunSettings ring = run_settings("cpu:3", 4, model, small_data(30982, 640));
        ring.config.all_reduce = AllReduceAlgorithm::Ring;
        ring_controller.start(ring);
        QVERIFY(ring_controller.waitForFinished(120000));
        ring_view.showStage(Stage::AllReduce);
        QTest::qWait(100);
        QVERIFY(ring_view.grab().save(dir + QStringLiteral("/step_view_ring.png")));

        ScalingPanel panel;
        panel.resize(1500, 820);
        panel.show();
        auto setup = [&](const char* devices, AllReduceAlgorithm algorithm) {
            ScalingSetup s;
            s.model = *model;
            s.data = make_train_data(*small_data(30982, 1600), 300);
            s.devices = DeviceConfig::parse(devices);
            s.config.batch_size = 32;
            s.config.seed = 1;
            s.config.all_reduce = algorithm;
            return s;
        };
        panel.setMaxReplicas(4);
        panel.setSteps(60);
        QVERIFY(panel.start(setup("cpu:4x512MB", AllReduceAlgorithm::ReduceToOneDevice)));
        QVERIFY(panel.waitForFinished(600000));
        QVERIFY(panel.start(setup("cpu:4", AllReduceAlgorithm::Ring)));
        QVERIFY(panel.waitForFinished(600000));
        QTest::qWait(300);
        QVERIFY(panel.grab().save(dir + QStringLiteral("/scaling.png")));
        // The What-if tab on the same experiments: 16 workers of one replica over 10 GbE.
        auto* tabs = panel.findChild<QTabWidget*>(QStringLiteral("scalingTabs"));
        QVERIFY(tabs != nullptr);
        tabs->setCurrentIndex(1);
        panel.whatIf()->setWorkers(16);
        QVERIFY(panel.whatIf()->setLink(QStringLiteral("10 GbE")));
        QTest::qWait(300);
        QVERIFY(panel.grab().save(dir + QStringLiteral("/scaling_what_if.png")));
    }
};

QTEST_MAIN(TestStepView)
#include "test_ui_step_view.moc"

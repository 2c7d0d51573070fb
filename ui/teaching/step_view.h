#pragma once
// The step view: one synchronous mirrored step drawn as it runs. The global batch and its real
// shards, one box per replica (its device, its copy of the variables, its shard, local loss and
// gradient norm), the gradient exchange drawn as the chosen all-reduce works (ring segments,
// arrows into one device and back out, or an NCCL box), the update and the barrier at the end of
// the step. The six stages of the step light up in order for every step the engine reports, with
// the step's real numbers beside them. "Slow motion" holds the engine after each step so a
// person can walk through training one step at a time; the replicas' variable checksums show
// that the mirrored copies stay identical.
#include <QWidget>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/train/events.h"

class QCheckBox;
class QLabel;
class QPushButton;
class QTimer;

namespace mirrorlab::ui {

class TrainingController;
class StepDiagram;

class StepView : public QWidget {
    Q_OBJECT
public:
    enum class Stage { Invalid = 0, CopyModel, SplitBatch, LocalGradients, AllReduce, Update, WaitForEveryone };
    Q_ENUM(Stage)

    explicit StepView(TrainingController* controller, QWidget* parent = nullptr);
    ~StepView() override;

    static QString stageName(Stage stage);
    // The slowest replica's milliseconds in `stage` of `step` (the step waits for it).
    static double stageMs(const StepEndEvent& step, Stage stage);
    // The stages a step goes through, in order (one replica: no all-reduce and nobody to wait for).
    static std::vector<Stage> stagesOf(const StepEndEvent& step);

    void clear();
    void setRunInfo(const TrainBeginEvent& begin);
    void addSteps(const std::vector<StepEndEvent>& steps);
    void setOptimizerText(const QString& text);

    bool slowMotion() const;
    void setSlowMotion(bool on);
    void nextStep();             // the engine runs exactly one more step, then waits again
    void setStageIntervalMs(int ms);  // how long each stage stays lit (tests shorten it)
    void showStage(Stage stage);  // lights the stages up to `stage` and holds there

    // What is shown, for tests and the screenshot.
    std::int64_t stepsSeen() const { return steps_seen_; }
    const StepEndEvent* shownStep() const { return shown_ ? &*shown_ : nullptr; }
    const TrainBeginEvent& runInfo() const { return begin_; }
    QString optimizerText() const { return optimizer_text_; }
    std::vector<std::int32_t> shardSizes() const;
    std::vector<Stage> stageSequence() const { return sequence_; }  // of the step on show
    std::vector<Stage> playedStages() const;                        // lit so far
    Stage currentStage() const;
    std::vector<std::uint64_t> checksums() const;
    bool checksumsIdentical() const;  // false while no checksums are known
    QString checksumBadgeText() const;
    QString statusText() const;
    QCheckBox* slowMotionBox() const { return slow_motion_; }
    QPushButton* nextStepButton() const { return next_step_; }

private:
    void connectController();
    void startStep(const StepEndEvent& step);
    void advanceStage();
    void updateControls();
    void updateStatus();

    TrainingController* controller_ = nullptr;
    TrainBeginEvent begin_;
    QString optimizer_text_;
    std::optional<StepEndEvent> shown_;    // the step whose stages are lighting up
    std::optional<StepEndEvent> pending_;  // the newest step, shown when the current one is done
    std::vector<Stage> sequence_;
    std::size_t played_ = 0;  // stages of sequence_ lit so far
    std::int64_t steps_seen_ = 0;
    int interval_override_ms_ = 0;
    int last_state_ = 0;  // TrainingController::State before the latest change

    QCheckBox* slow_motion_ = nullptr;
    QPushButton* next_step_ = nullptr;
    QLabel* status_ = nullptr;
    QLabel* explanation_ = nullptr;
    StepDiagram* diagram_ = nullptr;
    QTimer* stage_timer_ = nullptr;
};

}  // namespace mirrorlab::ui

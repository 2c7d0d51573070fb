#include "ui/teaching/step_view.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>

#include "core/optim/optimizer.h"
#include "ui/teaching/step_diagram.h"
#include "ui/training/training_controller.h"

namespace mirrorlab::ui {

namespace {

constexpr int kNormalStageMs = 140;  // steps stream in: each stage flashes briefly
constexpr int kSlowStageMs = 650;    // slow motion: time to read each stage

QString all_reduce_text(const std::string& name) {
    if (name == "ring") return StepView::tr("ring all-reduce");
    if (name == "reduce_to_one_device") return StepView::tr("reduce to one device, then broadcast");
    if (name == "nccl") return StepView::tr("NCCL all-reduce");
    return StepView::tr("no all-reduce");
}

QString replicas_text(int replicas) {
    return replicas == 1 ? StepView::tr("1 replica") : StepView::tr("%1 replicas").arg(replicas);
}

}  // namespace

StepView::StepView(TrainingController* controller, QWidget* parent) : QWidget(parent), controller_(controller) {
    slow_motion_ = new QCheckBox(tr("Slow motion"), this);
    slow_motion_->setObjectName(QStringLiteral("slowMotion"));
    slow_motion_->setToolTip(tr("Hold the engine after every step, so you can walk through training one step at a time"));
    next_step_ = new QPushButton(tr("Next step"), this);
    next_step_->setObjectName(QStringLiteral("nextStep"));
    next_step_->setToolTip(tr("Run exactly one more training step, then wait again"));
    status_ = new QLabel(this);
    status_->setObjectName(QStringLiteral("stepStatus"));
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    // Wraps: a long status would otherwise set the bottom docks' minimum width, and with it the
    // charts' column's, squeezing the side docks once the first step is shown.
    status_->setWordWrap(true);

    auto* controls = new QHBoxLayout;
    controls->addWidget(slow_motion_);
    controls->addWidget(next_step_);
    controls->addSpacing(12);
    controls->addWidget(status_, 1);

    diagram_ = new StepDiagram(this, this);
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(diagram_);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);

    explanation_ = new QLabel(
        tr("One synchronous step: every replica starts from the same variables, computes the gradients of its own "
           "shard of the global batch, the all-reduce sums those gradients so that every replica holds the gradient of "
           "the whole batch, and every replica applies the same update. So the copies stay identical, which the "
           "checksums show. The step is as fast as its slowest replica: the others wait at the barrier."),
        this);
    explanation_->setObjectName(QStringLiteral("stepExplanation"));
    explanation_->setWordWrap(true);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(controls);
    layout->addWidget(scroll, 1);
    layout->addWidget(explanation_);

    stage_timer_ = new QTimer(this);
    connect(stage_timer_, &QTimer::timeout, this, &StepView::advanceStage);
    connect(slow_motion_, &QCheckBox::toggled, this, [this](bool on) {
        if (controller_ != nullptr) {
            controller_->setStartHeld(on);
            const auto state = controller_->state();
            if (on && state == TrainingController::State::Running) {
                controller_->stepOnce();  // the step in flight finishes, then the engine waits
            } else if (!on && state == TrainingController::State::Paused) {
                controller_->resume();
            }
        }
        if (!on && shown_ && played_ >= sequence_.size() && pending_) advanceStage();
        updateControls();
    });
    connect(next_step_, &QPushButton::clicked, this, &StepView::nextStep);

    if (controller_ != nullptr) connectController();
    updateControls();
    updateStatus();
}

// A new run clears the view (and keeps slow motion on from its first step); its steps and state
// changes follow.
void StepView::connectController() {
    controller_->setStartHeld(slowMotion());
    connect(controller_, &TrainingController::runStarted, this, [this](int run_id) {
        clear();
        if (const RunRecord* run = controller_->run(run_id)) {
            setOptimizerText(tr("Update: %1, learning rate %2, the same step on every replica")
                                 .arg(QString::fromUtf8(optimizer_name(run->config.optimizer.kind).data()))
                                 .arg(run->config.optimizer.learning_rate));
        }
        // Slow motion from the first step on: the controller started the run held (setStartHeld).
        updateControls();
    });
    connect(controller_, &TrainingController::trainBegan, this, &StepView::setRunInfo);
    connect(controller_, &TrainingController::stepsEnded, this, &StepView::addSteps);
    connect(controller_, &TrainingController::stateChanged, this, [this](TrainingController::State state) {
        // Resumed from the toolbar: slow motion is over.
        if (state == TrainingController::State::Running && last_state_ == static_cast<int>(TrainingController::State::Paused) &&
            slowMotion()) {
            const QSignalBlocker block(slow_motion_);
            slow_motion_->setChecked(false);
            controller_->setStartHeld(false);
        }
        last_state_ = static_cast<int>(state);
        updateControls();
        updateStatus();
    });
}

StepView::~StepView() = default;

QString StepView::stageName(Stage stage) {
    switch (stage) {
        case Stage::CopyModel: return tr("Copy the model");
        case Stage::SplitBatch: return tr("Split the batch");
        case Stage::LocalGradients: return tr("Local gradients");
        case Stage::AllReduce: return tr("All-reduce");
        case Stage::Update: return tr("Update");
        case Stage::WaitForEveryone: return tr("Wait for everyone");
        case Stage::Invalid: break;
    }
    return {};
}

double StepView::stageMs(const StepEndEvent& step, Stage stage) {
    double slowest = 0.0;
    for (const PhaseTimings& r : step.replicas) {
        double ms = 0.0;
        switch (stage) {
            case Stage::CopyModel: ms = r.copy_model_ms; break;
            case Stage::SplitBatch: ms = r.split_ms; break;
            case Stage::LocalGradients: ms = r.forward_ms + r.backward_ms; break;
            case Stage::AllReduce: ms = r.allreduce_ms; break;
            case Stage::Update: ms = r.update_ms; break;
            case Stage::WaitForEveryone: ms = r.barrier_wait_ms + r.finish_wait_ms; break;
            case Stage::Invalid: break;
        }
        slowest = std::max(slowest, ms);
    }
    return slowest;
}

std::vector<StepView::Stage> StepView::stagesOf(const StepEndEvent& step) {
    std::vector<Stage> stages = {Stage::CopyModel, Stage::SplitBatch, Stage::LocalGradients};
    const bool mirrored = step.replicas.size() > 1;
    if (mirrored) stages.push_back(Stage::AllReduce);
    stages.push_back(Stage::Update);
    if (mirrored) stages.push_back(Stage::WaitForEveryone);
    return stages;
}

void StepView::clear() {
    stage_timer_->stop();
    begin_ = {};
    shown_.reset();
    pending_.reset();
    sequence_.clear();
    played_ = 0;
    steps_seen_ = 0;
    optimizer_text_.clear();
    updateStatus();
    diagram_->update();
}

void StepView::setRunInfo(const TrainBeginEvent& begin) {
    begin_ = begin;
    updateStatus();
    diagram_->update();
}

void StepView::setOptimizerText(const QString& text) {
    optimizer_text_ = text;
    diagram_->update();
}

namespace {

// The replicas compute gradient norms and checksums for a few steps a second
// (kDetailedStepStatsIntervalMs); a step without them has a zero checksum.
bool has_details(const StepEndEvent& step) { return !step.replicas.empty() && step.replicas.front().weights_checksum != 0; }

}  // namespace

void StepView::addSteps(const std::vector<StepEndEvent>& steps) {
    if (steps.empty()) return;
    steps_seen_ += static_cast<std::int64_t>(steps.size());
    // The newest step with its details, else the newest; a detailed step waiting is not replaced
    // by a newer one without them.
    const auto detailed = std::find_if(steps.rbegin(), steps.rend(), has_details);
    const StepEndEvent& newest = detailed != steps.rend() ? *detailed : steps.back();
    const bool busy = shown_ && played_ < sequence_.size();
    if (!busy || slowMotion()) {
        pending_.reset();
        startStep(newest);
    } else if (!pending_ || has_details(newest) || !has_details(*pending_)) {
        pending_ = newest;  // shown when the step on show has gone through its stages
    }
    updateStatus();
}

void StepView::startStep(const StepEndEvent& step) {
    shown_ = step;
    sequence_ = stagesOf(step);
    played_ = 1;
    stage_timer_->start(interval_override_ms_ > 0 ? interval_override_ms_ : slowMotion() ? kSlowStageMs : kNormalStageMs);
    updateStatus();
    diagram_->update();
}

void StepView::advanceStage() {
    if (shown_ && played_ < sequence_.size()) {
        ++played_;
    } else if (pending_) {
        const StepEndEvent next = *pending_;
        pending_.reset();
        startStep(next);
        return;
    }
    if (played_ >= sequence_.size() && !pending_) stage_timer_->stop();
    diagram_->update();
}

void StepView::showStage(Stage stage) {
    if (pending_) {
        startStep(*pending_);
        pending_.reset();
    }
    const auto found = std::find(sequence_.begin(), sequence_.end(), stage);
    played_ = found == sequence_.end() ? sequence_.size() : static_cast<std::size_t>(found - sequence_.begin()) + 1;
    stage_timer_->stop();
    diagram_->update();
}

bool StepView::slowMotion() const { return slow_motion_->isChecked(); }

void StepView::setSlowMotion(bool on) { slow_motion_->setChecked(on); }

void StepView::nextStep() {
    if (controller_ == nullptr) return;
    const auto state = controller_->state();
    if (state != TrainingController::State::Paused && state != TrainingController::State::Running) return;
    if (controller_->following()) return;  // another process's run: nothing here to step
    if (!slowMotion()) {
        const QSignalBlocker block(slow_motion_);
        slow_motion_->setChecked(true);
        controller_->setStartHeld(true);
    }
    controller_->stepOnce();
    updateControls();
}

void StepView::setStageIntervalMs(int ms) {
    interval_override_ms_ = ms;
    if (stage_timer_->isActive()) stage_timer_->setInterval(ms);
}

std::vector<std::int32_t> StepView::shardSizes() const {
    std::vector<std::int32_t> sizes;
    if (shown_) {
        for (const auto& r : shown_->replicas) sizes.push_back(r.shard_size);
    }
    return sizes;
}

std::vector<StepView::Stage> StepView::playedStages() const {
    return {sequence_.begin(), sequence_.begin() + static_cast<std::ptrdiff_t>(std::min(played_, sequence_.size()))};
}

StepView::Stage StepView::currentStage() const {
    if (played_ == 0 || sequence_.empty()) return Stage::Invalid;
    return sequence_[std::min(played_, sequence_.size()) - 1];
}

std::vector<std::uint64_t> StepView::checksums() const {
    std::vector<std::uint64_t> sums;
    if (shown_) {
        for (const auto& r : shown_->replicas) sums.push_back(r.weights_checksum);
    }
    return sums;
}

bool StepView::checksumsIdentical() const {
    const auto sums = checksums();
    if (sums.empty() || sums.front() == 0) return false;
    return std::all_of(sums.begin(), sums.end(), [&](std::uint64_t s) { return s == sums.front(); });
}

QString StepView::checksumBadgeText() const {
    const auto sums = checksums();
    if (sums.empty() || sums.front() == 0) return tr("checksums not reported");
    return checksumsIdentical() ? tr("✓ variables identical") : tr("✗ variables differ");
}

QString StepView::statusText() const { return status_->text(); }

void StepView::updateControls() {
    const bool active = controller_ != nullptr && (controller_->state() == TrainingController::State::Running ||
                                                   controller_->state() == TrainingController::State::Paused);
    // A followed run trains in its own process: it cannot be held here, as the toolbar's Next step says.
    next_step_->setEnabled(active && !controller_->following());
}

void StepView::updateStatus() {
    QString text;
    if (!shown_) {
        text = begin_.replicas > 0 ? tr("%1, waiting for the first step").arg(replicas_text(begin_.replicas)) : tr("No run yet");
    } else {
        text = tr("Step %1 (epoch %2, %3/%4) · %5 · %6")
                   .arg(shown_->global_step)
                   .arg(shown_->epoch)
                   .arg(shown_->step)
                   .arg(shown_->steps)
                   .arg(replicas_text(static_cast<int>(shown_->replicas.size())), all_reduce_text(shown_->all_reduce));
        if (controller_ != nullptr && slowMotion() && controller_->state() == TrainingController::State::Paused) {
            text += QStringLiteral(" · ") + tr("paused: press Next step");
        }
    }
    status_->setText(text);
}

}  // namespace mirrorlab::ui

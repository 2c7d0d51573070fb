#include "ui/teaching/timeline_view.h"

#include <QEvent>
#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

#include "ui/common/theme.h"
#include "ui/training/training_controller.h"

namespace mirrorlab::ui {

namespace {

constexpr int kMargin = 8;
constexpr int kLaneHeight = 22;
constexpr int kLaneGap = 8;
constexpr int kMaxGutter = 220;
constexpr double kMinLabelSpacing = 44.0;

QColor phase_colour(TimelineView::Phase phase) {
    switch (phase) {
        case TimelineView::Phase::DataWait: return {0xba, 0xb0, 0xac};
        case TimelineView::Phase::Forward: return {0x4e, 0x79, 0xa7};
        case TimelineView::Phase::Backward: return {0xf2, 0x8e, 0x2b};
        case TimelineView::Phase::BarrierWait: return {0xe1, 0x57, 0x59};
        case TimelineView::Phase::AllReduce: return {0xe1, 0x57, 0x59};
        case TimelineView::Phase::Update: return {0x59, 0xa1, 0x4f};
        case TimelineView::Phase::FinishWait: return {0x9a, 0x9a, 0x9a};
        case TimelineView::Phase::Invalid: break;
    }
    return Qt::black;
}

bool is_wait(TimelineView::Phase phase) {
    return phase == TimelineView::Phase::BarrierWait || phase == TimelineView::Phase::FinishWait;
}

void fill_bar(QPainter& painter, const QRectF& rect, TimelineView::Phase phase) {
    const QColor colour = phase_colour(phase);
    if (is_wait(phase)) {
        painter.fillRect(rect, colour.lighter(165));
        painter.fillRect(rect, QBrush(colour, Qt::BDiagPattern));
    } else {
        painter.fillRect(rect, colour);
    }
}

QString ms_text(double ms) { return TimelineView::tr("%1 ms").arg(ms, 0, 'f', ms < 10 ? 2 : 1); }

// The step's length on the time axis: its reported time, or the phases' end if that is later.
double step_length_ms(const StepEndEvent& step) {
    double end = 0.0;
    for (const PhaseTimings& r : step.replicas) end = std::max(end, r.data_wait_ms + r.update_begin_ms + r.update_ms + r.finish_wait_ms);
    return std::max(step.step_time_ms, end);
}

}  // namespace

TimelineView::TimelineView(TrainingController* controller, QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("timelineView"));
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
    setAutoFillBackground(true);
    setBackgroundRole(QPalette::Base);  // white on a light palette, dark on a dark one
    if (controller != nullptr) {
        connect(controller, &TrainingController::runStarted, this, [this] { clear(); });
        connect(controller, &TrainingController::trainBegan, this, &TimelineView::setRunInfo);
        connect(controller, &TrainingController::stepsEnded, this, &TimelineView::addSteps);
    }
}

TimelineView::~TimelineView() = default;

QString TimelineView::phaseName(Phase phase) {
    switch (phase) {
        case Phase::DataWait: return tr("data wait");
        case Phase::Forward: return tr("forward");
        case Phase::Backward: return tr("backward");
        case Phase::BarrierWait: return tr("waiting at the barrier");
        case Phase::AllReduce: return tr("all-reduce");
        case Phase::Update: return tr("update");
        case Phase::FinishWait: return tr("waiting for the slowest update");
        case Phase::Invalid: break;
    }
    return {};
}

void TimelineView::clear() {
    steps_.clear();
    devices_.clear();
    updateGeometry();
    update();
}

void TimelineView::setRunInfo(const TrainBeginEvent& begin) {
    devices_ = begin.devices;
    updateGeometry();
    update();
}

void TimelineView::addSteps(const std::vector<StepEndEvent>& steps) {
    const int lanes_before = laneCount();
    for (const StepEndEvent& step : steps) {
        steps_.push_back(step);
        if (steps_.size() > static_cast<std::size_t>(kMaxSteps)) steps_.pop_front();
    }
    if (laneCount() != lanes_before) updateGeometry();
    update();
}

int TimelineView::laneCount() const {
    if (!steps_.empty()) return static_cast<int>(steps_.back().replicas.size());
    return static_cast<int>(devices_.size());
}

QStringList TimelineView::laneNames() const {
    QStringList names;
    for (int lane = 0; lane < laneCount(); ++lane) {
        const QString device = lane < static_cast<int>(devices_.size()) ? QString::fromStdString(devices_[static_cast<std::size_t>(lane)])
                                                                          : QString();
        names << (device.isEmpty() ? tr("Replica %1").arg(lane) : tr("Replica %1 · %2").arg(lane).arg(device));
    }
    return names;
}

QSize TimelineView::sizeHint() const {
    const int lanes = std::max(laneCount(), 2);
    const int line = fontMetrics().height();
    return {900, 2 * kMargin + 3 * (line + 4) + lanes * (kLaneHeight + kLaneGap) + line};
}

QSize TimelineView::minimumSizeHint() const {
    const int lanes = std::max(laneCount(), 1);
    const int line = fontMetrics().height();
    return {360, 2 * kMargin + 3 * (line + 4) + lanes * (kLaneHeight + kLaneGap) + line};
}

QRectF TimelineView::plotArea() const {
    const QFontMetrics metrics = fontMetrics();
    int gutter = 0;
    for (const QString& name : laneNames()) gutter = std::max(gutter, metrics.horizontalAdvance(name));
    gutter = std::min(gutter + 12, kMaxGutter);
    const int line = metrics.height();
    const double top = kMargin + 3 * (line + 4);  // legend, summary, step numbers
    const double height = std::max(1, laneCount()) * (kLaneHeight + kLaneGap);
    return QRectF(kMargin + gutter, top, std::max(10, width() - 2 * kMargin - gutter), height);
}

double TimelineView::laneTop(int lane) const { return plotArea().top() + lane * (kLaneHeight + kLaneGap); }

std::vector<TimelineView::Bar> TimelineView::bars() const {
    std::vector<Bar> all;
    if (steps_.empty()) return all;
    const QRectF plot = plotArea();
    double total_ms = 0.0;
    for (const StepEndEvent& step : steps_) total_ms += step_length_ms(step);
    if (total_ms <= 0) return all;
    const double scale = plot.width() / total_ms;
    double offset_ms = 0.0;
    for (const StepEndEvent& step : steps_) {
        const int lanes = static_cast<int>(step.replicas.size());
        for (int lane = 0; lane < lanes; ++lane) {
            const PhaseTimings& r = step.replicas[static_cast<std::size_t>(lane)];
            const double dw = r.data_wait_ms;
            auto add = [&](Phase phase, double begin, double length) {
                if (!(length > 0.0)) return;
                Bar bar;
                bar.lane = lane;
                bar.step = step.global_step;
                bar.phase = phase;
                bar.begin_ms = begin;
                bar.length_ms = length;
                const double left = plot.left() + (offset_ms + begin) * scale;
                const double top = laneTop(lane);
                // Waits are drawn thinner, so that work stands out from idling.
                const double inset = is_wait(phase) ? kLaneHeight * 0.22 : 0.0;
                bar.rect = QRectF(left, top + inset, std::max(1.0, length * scale), kLaneHeight - 2 * inset);
                all.push_back(bar);
            };
            add(Phase::DataWait, 0.0, dw);
            add(Phase::Forward, dw + r.split_ms, r.forward_ms);
            add(Phase::Backward, dw + r.split_ms + r.forward_ms, r.backward_ms);
            if (lanes > 1) {
                add(Phase::BarrierWait, dw + r.allreduce_begin_ms - r.barrier_wait_ms, r.barrier_wait_ms);
                add(Phase::AllReduce, dw + r.allreduce_begin_ms, r.allreduce_ms);
            }
            add(Phase::Update, dw + r.update_begin_ms, r.update_ms);
            if (lanes > 1) add(Phase::FinishWait, dw + r.update_begin_ms + r.update_ms, r.finish_wait_ms);
        }
        offset_ms += step_length_ms(step);
    }
    return all;
}

QString TimelineView::toolTipAt(const QPoint& position) const {
    const auto all = bars();
    const QStringList names = laneNames();
    // Later bars are drawn on top; look them up first. The bar under the mouse wins; only where
    // there is none does a bar within 2 px answer (a bar thinner than the mouse), or a 1 px update
    // right after a 3 px all-reduce would take the all-reduce's own middle.
    const auto hit = [&](int slack_px) {
        return std::find_if(all.rbegin(), all.rend(), [&](const Bar& bar) {
            return bar.rect.adjusted(-slack_px, 0, slack_px, 0).contains(position);
        });
    };
    auto it = hit(0);
    if (it == all.rend()) it = hit(2);
    if (it == all.rend()) return {};
    const StepEndEvent* step = nullptr;
    for (const auto& s : steps_) {
        if (s.global_step == it->step) step = &s;
    }
    QString text = tr("Step %1 · %2").arg(it->step).arg(names.value(it->lane));
    text += QLatin1Char('\n') + tr("%1: %2 (%3 to %4 into the step)")
                                    .arg(phaseName(it->phase), ms_text(it->length_ms), ms_text(it->begin_ms),
                                         ms_text(it->begin_ms + it->length_ms));
    if (it->phase == Phase::BarrierWait) {
        text += QLatin1Char('\n') + tr("This replica had its gradients and waited for the slowest one before the all-reduce.");
    } else if (it->phase == Phase::FinishWait) {
        text += QLatin1Char('\n') + tr("This replica had updated and waited for the others to finish the step.");
    }
    if (step != nullptr) text += QLatin1Char('\n') + tr("Whole step: %1").arg(ms_text(step->step_time_ms));
    return text;
}

bool TimelineView::event(QEvent* event) {
    if (event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        const QString text = toolTipAt(help->pos());
        if (text.isEmpty()) {
            QToolTip::hideText();
            event->ignore();
        } else {
            QToolTip::showText(help->globalPos(), text, this);
        }
        return true;
    }
    return QWidget::event(event);
}

void TimelineView::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    const QFontMetrics metrics = fontMetrics();
    const int line = metrics.height();
    const QRectF plot = plotArea();
    double y = kMargin;

    drawLegend(painter, y);
    y += line + 4;

    if (steps_.empty()) {
        painter.setPen(palette().color(QPalette::PlaceholderText));
        painter.drawText(QRectF(kMargin, y, width() - 2 * kMargin, 2 * line), Qt::AlignLeft | Qt::TextWordWrap,
                         tr("No steps yet: start a run to see each replica's phases, step by step."));
        return;
    }

    drawSummary(painter, y);
    y += line + 4;

    // Step boundaries and numbers.
    double total_ms = 0.0;
    for (const StepEndEvent& step : steps_) total_ms += step_length_ms(step);
    const double scale = total_ms > 0 ? plot.width() / total_ms : 0.0;
    double offset_ms = 0.0, last_label = -1e9;
    // Greys chosen on white, on this palette (ui/common/theme.h).
    auto ink = [this](const QColor& designed_on_white) { return onPalette(designed_on_white, palette()); };
    for (const StepEndEvent& step : steps_) {
        const double left = plot.left() + offset_ms * scale;
        painter.setPen(ink(QColor(0xd8, 0xd8, 0xd8)));
        painter.drawLine(QPointF(left, y + line), QPointF(left, plot.bottom()));
        if (left - last_label >= kMinLabelSpacing) {
            painter.setPen(ink(QColor(0x60, 0x60, 0x60)));
            painter.drawText(QRectF(left + 2, y, kMinLabelSpacing, line), Qt::AlignLeft | Qt::AlignVCenter,
                             tr("#%1").arg(step.global_step));
            last_label = left;
        }
        offset_ms += step_length_ms(step);
    }

    // Lanes.
    const QStringList names = laneNames();
    for (int lane = 0; lane < laneCount(); ++lane) {
        const double top = laneTop(lane);
        painter.fillRect(QRectF(plot.left(), top, plot.width(), kLaneHeight), ink(QColor(0xf6, 0xf6, 0xf6)));
        painter.setPen(palette().color(QPalette::WindowText));
        painter.drawText(QRectF(kMargin, top, plot.left() - kMargin - 6, kLaneHeight), Qt::AlignRight | Qt::AlignVCenter,
                         metrics.elidedText(names.value(lane), Qt::ElideLeft, static_cast<int>(plot.left() - kMargin - 6)));
    }
    for (const Bar& bar : bars()) fill_bar(painter, bar.rect, bar.phase);

    // Time scale.
    painter.setPen(ink(QColor(0x60, 0x60, 0x60)));
    painter.drawText(QRectF(plot.left(), plot.bottom(), plot.width(), line), Qt::AlignRight | Qt::AlignVCenter,
                     tr("%1 across the view · hover a bar for its numbers").arg(ms_text(total_ms)));
}

// One swatch and name per phase, as many as fit on one line.
void TimelineView::drawLegend(QPainter& painter, double y) const {
    const QFontMetrics metrics = fontMetrics();
    const int line = metrics.height();
    double x = kMargin;
    for (Phase phase : {Phase::DataWait, Phase::Forward, Phase::Backward, Phase::BarrierWait, Phase::AllReduce, Phase::Update,
                        Phase::FinishWait}) {
        const QString name = phaseName(phase);
        const double needed = 16 + metrics.horizontalAdvance(name) + 14;
        if (x + needed > width() - kMargin && x > kMargin) break;  // a narrow view keeps what fits
        fill_bar(painter, QRectF(x, y + 2, 12, line - 4), phase);
        painter.setPen(palette().color(QPalette::WindowText));
        painter.drawText(QRectF(x + 16, y, needed, line), Qt::AlignLeft | Qt::AlignVCenter, name);
        x += needed;
    }
}

// What the last step says about stragglers and waiting.
void TimelineView::drawSummary(QPainter& painter, double y) const {
    const QFontMetrics metrics = fontMetrics();
    const int line = metrics.height();
    const StepEndEvent& last = steps_.back();
    int slowest = 0, waited = 0;
    double slowest_ms = -1.0, waited_ms = -1.0;
    for (int i = 0; i < static_cast<int>(last.replicas.size()); ++i) {
        const PhaseTimings& r = last.replicas[static_cast<std::size_t>(i)];
        if (r.forward_ms + r.backward_ms > slowest_ms) {
            slowest_ms = r.forward_ms + r.backward_ms;
            slowest = i;
        }
        if (r.barrier_wait_ms > waited_ms) {
            waited_ms = r.barrier_wait_ms;
            waited = i;
        }
    }
    painter.setPen(palette().color(QPalette::WindowText));
    const QString summary =
        last.replicas.size() > 1
            ? tr("Last %1 steps. Step %2: %3; slowest gradients on replica %4 (%5); longest wait at the barrier: replica %6 (%7)")
                  .arg(steps_.size())
                  .arg(last.global_step)
                  .arg(ms_text(last.step_time_ms), QString::number(slowest), ms_text(slowest_ms), QString::number(waited),
                       ms_text(waited_ms))
            : tr("Last %1 steps. Step %2: %3 on one replica (no all-reduce, no waiting)")
                  .arg(steps_.size())
                  .arg(last.global_step)
                  .arg(ms_text(last.step_time_ms));
    painter.drawText(QRectF(kMargin, y, width() - 2 * kMargin, line), Qt::AlignLeft | Qt::AlignVCenter,
                     metrics.elidedText(summary, Qt::ElideRight, width() - 2 * kMargin));
}

}  // namespace mirrorlab::ui

#include "ui/training/monitor_panel.h"

#include <QAreaSeries>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QLocale>
#include <QPainter>
#include <QScrollArea>
#include <QTimer>
#include <QValueAxis>
#include <QVBoxLayout>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "core/backend/arena.h"
#include "ui/common/combo_box.h"
#include "ui/common/format.h"
#include "ui/common/theme.h"
#include "ui/training/training_controller.h"

namespace mirrorlab::ui {

namespace {

constexpr std::size_t kHistory = 200;     // steps kept per chart
constexpr std::size_t kRateWindow = 20;   // steps in the rolling samples/s
// Twice a second: the phases and rates are read, not watched frame by frame, and every refresh
// lays out rich text and repaints two charts on the main thread, which shares the cores with the
// replicas.
constexpr int kRefreshMs = RefreshPacer::kFastestMs;
constexpr int kPhases = 5;
constexpr int kBarHeight = 14;
constexpr int kRowGap = 10;
constexpr int kMargin = 6;
constexpr int kMaxMemoryViewHeight = 280;
constexpr int kSideBySideWidth = 420;  // narrower: the throughput chart goes under its number

const std::array<QColor, kPhases> kPhaseColours = {QColor(0xba, 0xb0, 0xac), QColor(0x4e, 0x79, 0xa7),
                                                   QColor(0xf2, 0x8e, 0x2b), QColor(0xe1, 0x57, 0x59),
                                                   QColor(0x59, 0xa1, 0x4f)};

QString phase_name(int phase) {
    switch (phase) {
        case 0: return MonitorPanel::tr("data wait");
        case 1: return MonitorPanel::tr("forward");
        case 2: return MonitorPanel::tr("backward");
        case 3: return MonitorPanel::tr("all-reduce");
        default: return MonitorPanel::tr("update");
    }
}

QString ms_text(double ms) { return MonitorPanel::tr("%1 ms").arg(ms, 0, 'f', ms < 10 ? 2 : 1); }

// A range from 0 that ends on a round number with about `intervals` + 1 round ticks (1, 2, 2.5 or
// 5 x 10^k apart), and labels with as many decimals as those ticks need. A short chart asks for
// fewer: Qt Charts elides labels that do not fit to "...".
void set_nice_range(QValueAxis* axis, double top, int intervals = 4) {
    top = std::max(top, 1e-3);
    const double raw = top / intervals;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    double factor = 10.0;
    for (double candidate : {1.0, 2.0, 2.5, 5.0}) {
        if (candidate * magnitude >= raw) {
            factor = candidate;
            break;
        }
    }
    const double step = factor * magnitude;
    const int steps = static_cast<int>(std::ceil(top / step - 1e-9));
    axis->setRange(0.0, steps * step);
    axis->setTickCount(steps + 1);
    const int decimals = std::clamp(static_cast<int>(-std::floor(std::log10(step) + 1e-9)) + (factor == 2.5 ? 1 : 0), 0, 4);
    axis->setLabelFormat(QStringLiteral("%.%1f").arg(decimals));
}

void style_small_axis(QValueAxis* axis) {
    QFont font = axis->labelsFont();
    font.setPointSizeF(std::max(6.0, font.pointSizeF() * 0.85));
    axis->setLabelsFont(font);
    axis->setTitleFont(font);
}

}  // namespace

// One row per logical device: name and "in use · peak · limit" text, then a bar filled to the
// bytes in use with a tick at the peak, scaled to the limit (or, with no limit, to the largest
// peak of all devices).
class MemoryBarsView : public QWidget {
public:
    explicit MemoryBarsView(QWidget* parent) : QWidget(parent) {
        setObjectName(QStringLiteral("memoryBars"));
        setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
    }

    void setDevices(std::vector<DeviceMemory> devices) {
        devices_ = std::move(devices);
        fitScrollArea();
        updateGeometry();
        update();
    }
    const std::vector<DeviceMemory>& devices() const { return devices_; }

    QSize sizeHint() const override { return {420, heightForWidth(420)}; }
    // Height follows the width (heightForWidth); the enclosing scroll area is sized to the rows.
    QSize minimumSizeHint() const override { return {200, fontMetrics().height() + kBarHeight + 2 * kMargin}; }
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override {
        const int line = fontMetrics().height() + 2;
        if (devices_.empty()) return 2 * kMargin + placeholderRect(width).height();
        const bool two = twoLines(width);
        int height = 2 * kMargin - kRowGap;
        for (const auto& d : devices_) {
            const int lines = (two ? 1 : 0) + static_cast<int>(textLines(d, width, two).size());  // name, numbers
            height += lines * line + kBarHeight + kRowGap;
        }
        return height;
    }

    // The numbers of one row as painted at `width`: beside the name when every row fits on one
    // line (`two` false, from twoLines()), else under it, broken at the " · " separators.
    QStringList textLines(const DeviceMemory& device, int width, bool two) const {
        return two ? wrapped(describe(device), width - 2 * kMargin) : QStringList{describe(device)};
    }

    // Whether some row's name and numbers do not fit on one line at `width`: then every row puts
    // its numbers under its name.
    bool twoLines(int width) const {
        QFont bold = font();
        bold.setBold(true);
        const QFontMetrics bold_metrics(bold), metrics(font());
        for (const auto& d : devices_) {
            const int needed = bold_metrics.horizontalAdvance(QString::fromStdString(d.device)) + 16 +
                               metrics.horizontalAdvance(describe(d));
            if (needed > width - 2 * kMargin) return true;
        }
        return false;
    }

    QString describe(const DeviceMemory& device) const {
        const QString limit =
            device.limit_bytes > 0 ? MonitorPanel::tr("limit %1").arg(bytes_text(device.limit_bytes)) : MonitorPanel::tr("no limit");
        QString text = MonitorPanel::tr("%1 in use · peak %2 · %3")
                           .arg(bytes_text(device.bytes_in_use), bytes_text(device.peak_bytes), limit);
        // Virtual GPUs share one chip: what it has left matters as much as each device's limit.
        if (device.physical_free_bytes > 0) text += MonitorPanel::tr(" · %1 free on the GPU").arg(bytes_text(device.physical_free_bytes));
        return text;
    }

protected:
    void resizeEvent(QResizeEvent* event) override {
        QWidget::resizeEvent(event);
        fitScrollArea();
        updateGeometry();
    }

    void paintEvent(QPaintEvent*) override {
        QPainter painter(this);
        const QFontMetrics metrics = fontMetrics();
        const int line = metrics.height() + 2;
        const int left = kMargin, right = width() - kMargin;
        if (devices_.empty()) {
            painter.setPen(palette().color(QPalette::PlaceholderText));
            painter.drawText(placeholderRect(width()), Qt::AlignLeft | Qt::TextWordWrap, placeholder());
            return;
        }
        std::int64_t largest_peak = 1;
        for (const auto& d : devices_) largest_peak = std::max({largest_peak, d.peak_bytes, d.bytes_in_use});
        const bool two = twoLines(width());
        // Greys chosen on white, on this palette (ui/common/theme.h).
        auto ink = [this](const QColor& designed_on_white) { return onPalette(designed_on_white, palette()); };
        QFont bold = font();
        bold.setBold(true);
        int y = kMargin;
        for (const auto& device : devices_) {
            const QString name = QString::fromStdString(device.device);
            const QString text = describe(device);
            painter.setFont(bold);
            painter.setPen(palette().color(QPalette::WindowText));
            painter.drawText(QRect(left, y, right - left, line), Qt::AlignLeft | Qt::AlignVCenter, name);
            painter.setFont(font());
            if (two) {
                for (const QString& part : textLines(device, width(), two)) {
                    y += line;
                    painter.drawText(QRect(left, y, right - left, line), Qt::AlignLeft | Qt::AlignVCenter,
                                     metrics.elidedText(part, Qt::ElideRight, right - left));
                }
            } else {
                painter.drawText(QRect(left, y, right - left, line), Qt::AlignRight | Qt::AlignVCenter, text);
            }
            y += line;

            const QRectF bar(left, y, right - left, kBarHeight);
            const double scale = static_cast<double>(device.limit_bytes > 0 ? device.limit_bytes : largest_peak);
            const double used = std::clamp(static_cast<double>(device.bytes_in_use) / scale, 0.0, 1.0);
            const double peak = std::clamp(static_cast<double>(device.peak_bytes) / scale, 0.0, 1.0);
            painter.fillRect(bar, ink(device.limit_bytes > 0 ? QColor(0xe6, 0xe6, 0xe6) : QColor(0xf2, 0xf2, 0xf2)));
            if (device.limit_bytes <= 0) painter.fillRect(bar, QBrush(ink(QColor(0xd0, 0xd0, 0xd0)), Qt::BDiagPattern));
            // A sliver stays visible for a few KiB in a GiB limit: something is in use.
            const double used_width = device.bytes_in_use > 0 ? std::max(2.0, bar.width() * used) : 0.0;
            painter.fillRect(QRectF(bar.left(), bar.top(), used_width, bar.height()), QColor(0x4e, 0x79, 0xa7));
            const double peak_x = bar.left() + bar.width() * peak;
            painter.setPen(QPen(QColor(0xd4, 0x55, 0x00), 2));
            painter.drawLine(QPointF(peak_x, bar.top() - 2), QPointF(peak_x, bar.bottom() + 2));
            painter.setPen(QPen(ink(QColor(0x80, 0x80, 0x80)), 1));
            painter.setBrush(Qt::NoBrush);
            painter.drawRect(bar.adjusted(0, 0, -1, -1));
            y += kBarHeight + kRowGap;
        }
    }

private:
    static QString placeholder() {
        return MonitorPanel::tr("No memory reported yet: start a run to see each logical device's memory.");
    }
    // Where the placeholder goes at `width`: as many lines as it wraps to (a narrow dock cut its
    // last word off when two lines were assumed).
    QRect placeholderRect(int width) const {
        const int text_width = std::max(width - 2 * kMargin, 40);
        const QRect needed = fontMetrics().boundingRect(QRect(0, 0, text_width, 10000), Qt::AlignLeft | Qt::TextWordWrap, placeholder());
        return {kMargin, kMargin, text_width, needed.height() + 2};
    }

    // Every row stays in view up to kMaxMemoryViewHeight; more rows scroll.
    void fitScrollArea() {
        QWidget* viewport = parentWidget();
        auto* area = viewport != nullptr ? qobject_cast<QScrollArea*>(viewport->parentWidget()) : nullptr;
        if (area == nullptr) return;
        const int height = std::min(heightForWidth(std::max(viewport->width(), 200)), kMaxMemoryViewHeight);
        // Exactly the rows' height: more would only push the legend away from the bars.
        if (area->minimumHeight() != height || area->maximumHeight() != height) area->setFixedHeight(height);
    }

    // The description broken at its " · " separators into lines no wider than `width` (a narrow
    // dock shows every number on more lines instead of cutting the last ones off).
    QStringList wrapped(const QString& text, int width) const {
        const QString separator = QStringLiteral(" · ");
        const QFontMetrics metrics(font());
        QStringList lines;
        QString current;
        for (const QString& part : text.split(separator)) {
            const QString longer = current.isEmpty() ? part : current + separator + part;
            if (!current.isEmpty() && metrics.horizontalAdvance(longer) > width) {
                lines << current;
                current = part;
            } else {
                current = longer;
            }
        }
        if (!current.isEmpty()) lines << current;
        return lines;
    }


    std::vector<DeviceMemory> devices_;
};

MonitorPanel::MonitorPanel(TrainingController* controller, QWidget* parent) : QWidget(parent), controller_(controller) {
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(buildThroughputBox());
    layout->addWidget(buildMemoryBox());
    layout->addWidget(buildPhaseBox(), 1);

    refresh_timer_ = new QTimer(this);
    refresh_timer_->setSingleShot(true);
    refresh_timer_->setInterval(kRefreshMs);  // the controller's pacer may stretch it (scheduleRefresh)
    connect(refresh_timer_, &QTimer::timeout, this, &MonitorPanel::refreshNow);
    connect(replica_, &QComboBox::currentIndexChanged, this, [this] { refreshNow(); });

    if (controller != nullptr) {
        connect(controller, &TrainingController::runStarted, this, [this] { clear(); });
        connect(controller, &TrainingController::trainBegan, this,
                [this](const TrainBeginEvent& event) { setReplicaNames(event.devices); });
        connect(controller, &TrainingController::stepsEnded, this, &MonitorPanel::addSteps);
        connect(controller, &TrainingController::memoryUpdated, this, &MonitorPanel::setMemory);
        // A run's last steps are shown when it ends, not a paced interval later.
        connect(controller, &TrainingController::stateChanged, this, [this](TrainingController::State state) {
            if (state == TrainingController::State::Idle && refresh_timer_->isActive()) refreshNow();
        });
    }
    clear();
    keepWrappedTextTall();
}

// Throughput: a big number and its recent history.
QGroupBox* MonitorPanel::buildThroughputBox() {
    auto* rate_box = new QGroupBox(tr("Throughput"), this);
    auto* rate_layout = new QBoxLayout(QBoxLayout::LeftToRight, rate_box);
    rate_layout_ = rate_layout;
    auto* number_layout = new QVBoxLayout;
    rate_label_ = new QLabel(rate_box);
    rate_label_->setObjectName(QStringLiteral("samplesPerSecond"));
    QFont big = rate_label_->font();
    big.setPointSizeF(big.pointSizeF() * 2.0);
    big.setBold(true);
    rate_label_->setFont(big);
    auto* rate_caption = new QLabel(tr("samples/s\n(mean of the last %1 steps)").arg(kRateWindow), rate_box);
    rate_caption->setWordWrap(true);  // a narrow dock wraps it instead of scrolling sideways
    number_layout->addStretch(1);
    number_layout->addWidget(rate_label_);
    number_layout->addWidget(rate_caption);
    number_layout->addStretch(1);
    rate_layout->addLayout(number_layout);

    auto* rate_chart = new QChart;
    rate_chart->setTheme(chartTheme(palette()));  // first: a theme resets the colours set below
    rate_chart->legend()->hide();
    rate_chart->setMargins(QMargins(2, 2, 2, 2));
    rate_chart->setBackgroundRoundness(0);
    rate_series_ = new QLineSeries(rate_chart);
    rate_series_->setName(tr("samples/s"));
    rate_series_->setColor(QColor(0x4e, 0x79, 0xa7));
    rate_chart->addSeries(rate_series_);
    rate_x_ = new QValueAxis(rate_chart);
    rate_x_->setLabelFormat(QStringLiteral("%d"));
    rate_x_->setTickCount(3);
    rate_y_ = new QValueAxis(rate_chart);
    style_small_axis(rate_x_);
    style_small_axis(rate_y_);
    rate_chart->addAxis(rate_x_, Qt::AlignBottom);
    rate_chart->addAxis(rate_y_, Qt::AlignLeft);
    rate_series_->attachAxis(rate_x_);
    rate_series_->attachAxis(rate_y_);
    rate_view_ = new QChartView(rate_chart, rate_box);
    rate_view_->setObjectName(QStringLiteral("samplesPerSecondChart"));
    rate_view_->setAccessibleName(tr("Samples per second over the last steps"));
    rate_view_->setToolTip(rate_view_->accessibleName());
    rate_view_->setRenderHint(QPainter::Antialiasing);
    rate_view_->setMinimumHeight(110);
    rate_layout->addWidget(rate_view_, 1);
    return rate_box;
}

// Memory per logical device.
QGroupBox* MonitorPanel::buildMemoryBox() {
    auto* memory_box = new QGroupBox(tr("Memory per logical device"), this);
    auto* memory_layout = new QVBoxLayout(memory_box);
    auto* memory_scroll = new QScrollArea(memory_box);
    memory_scroll->setObjectName(QStringLiteral("memoryScroll"));
    memory_scroll->setWidgetResizable(true);
    memory_scroll->setFrameShape(QFrame::NoFrame);
    memory_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    memory_ = new MemoryBarsView(memory_scroll);
    memory_scroll->setWidget(memory_);
    memory_layout->addWidget(memory_scroll);
    auto* memory_legend = new QLabel(tr("Blue: in use · orange tick: peak · bar end: the device's limit (hatched: "
                                        "no limit, scaled to the largest peak)"),
                                     memory_box);
    memory_legend->setWordWrap(true);
    QPalette legend_palette = memory_legend->palette();
    legend_palette.setColor(QPalette::WindowText, legend_palette.color(QPalette::PlaceholderText));
    memory_legend->setPalette(legend_palette);
    memory_layout->addWidget(memory_legend);
    return memory_box;
}

// Step time per phase, stacked, for one replica at a time.
QGroupBox* MonitorPanel::buildPhaseBox() {
    auto* phase_box = new QGroupBox(tr("Step time per phase"), this);
    auto* phase_layout = new QVBoxLayout(phase_box);
    // The choices say "Replica N · device" themselves: without a label beside it the box has the
    // dock's width, and on a laptop "Replica 0 · /device:CPU:0" shows whole. Longer names (another
    // worker's devices) are elided rather than widening the dock; the list shows them whole.
    replica_ = new QComboBox(phase_box);
    replica_->setObjectName(QStringLiteral("replicaSelector"));
    replica_->setAccessibleName(tr("Replica"));
    replica_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    replica_->setMinimumContentsLength(12);
    replica_->setToolTip(tr("The replica whose step time the chart shows"));
    phase_layout->addWidget(replica_);

    auto* phase_chart = new QChart;
    phase_chart->setTheme(chartTheme(palette()));
    phase_chart->setMargins(QMargins(4, 4, 4, 4));
    phase_chart->setBackgroundRoundness(0);
    // The summary under the chart is the legend: it wraps where Qt's legend would elide.
    phase_chart->legend()->hide();
    phase_x_ = new QValueAxis(phase_chart);
    phase_x_->setLabelFormat(QStringLiteral("%d"));
    phase_x_->setTitleText(tr("step"));
    phase_x_->setTickCount(5);
    phase_y_ = new QValueAxis(phase_chart);
    phase_y_->setTitleText(tr("ms"));
    style_small_axis(phase_x_);
    style_small_axis(phase_y_);
    phase_chart->addAxis(phase_x_, Qt::AlignBottom);
    phase_chart->addAxis(phase_y_, Qt::AlignLeft);
    for (int phase = 0; phase < kPhases; ++phase) {
        auto* upper = new QLineSeries;
        auto* lower = phase > 0 ? new QLineSeries : nullptr;
        auto* area = new QAreaSeries(upper, lower);
        if (upper->parent() == nullptr) upper->setParent(area);
        if (lower != nullptr && lower->parent() == nullptr) lower->setParent(area);
        area->setName(phase_name(phase));
        area->setColor(kPhaseColours[static_cast<std::size_t>(phase)]);
        // A cosmetic 1-pixel border is drawn as plain lines; a wider pen goes through the stroker.
        QPen border(kPhaseColours[static_cast<std::size_t>(phase)].darker(115));
        border.setWidth(0);
        area->setPen(border);
        phase_chart->addSeries(area);
        area->attachAxis(phase_x_);
        area->attachAxis(phase_y_);
        phase_upper_.push_back(upper);
        phase_lower_.push_back(lower);
    }
    phase_view_ = new QChartView(phase_chart, phase_box);
    phase_view_->setObjectName(QStringLiteral("phaseChart"));
    phase_view_->setAccessibleName(tr("Step time per phase"));
    phase_view_->setToolTip(tr("Each step's time, split into its phases and stacked"));
    // No antialiasing here: filling five stacked areas of 200 jagged steps with it was two thirds
    // of the window's painting on a software-rendered display (Xvfb, remote desktops), time taken
    // from the replicas; the areas are flat colours that need no smooth edges.
    phase_view_->setRenderHint(QPainter::Antialiasing, false);
    phase_view_->setMinimumHeight(170);
    phase_layout->addWidget(phase_view_, 1);
    phase_summary_ = new QLabel(phase_box);
    phase_summary_->setObjectName(QStringLiteral("phaseSummary"));
    phase_summary_->setWordWrap(true);
    phase_summary_->setTextFormat(Qt::RichText);
    phase_layout->addWidget(phase_summary_);
    return phase_box;
}

MonitorPanel::~MonitorPanel() = default;

void MonitorPanel::keepWrappedTextTall() {
    // A word-wrapped label's minimum height is that of its widest layout; in a narrow dock it
    // wraps to more lines, and a layout squeezed to its minimum then draws the chart over them.
    // Qt's boxes do honour a height for the width, but by squeezing the other rows under their
    // minimum, so the labels here give up theirs and get the height of their lines at their width.
    for (QLabel* label : findChildren<QLabel*>()) {
        if (!label->wordWrap()) continue;
        if (QSizePolicy policy = label->sizePolicy(); policy.hasHeightForWidth()) {
            policy.setHeightForWidth(false);
            label->setSizePolicy(policy);
            label->installEventFilter(this);  // each new width sets the height again
        }
        fitLabelHeight(label);
    }
}

void MonitorPanel::fitLabelHeight(QLabel* label) {
    if (label->width() <= 0) return;
    // Exactly its lines: a taller label centres its text and opens a gap above it. QLabel bounds
    // its height for a width by its own minimum and maximum, so those are let go while asking.
    const int old_min = label->minimumHeight(), old_max = label->maximumHeight();
    label->setMinimumHeight(0);
    label->setMaximumHeight(QWIDGETSIZE_MAX);
    const int needed = label->heightForWidth(label->width());
    label->setMinimumHeight(old_min);
    label->setMaximumHeight(old_max);
    if (needed > 0 && (label->minimumHeight() != needed || label->maximumHeight() != needed)) label->setFixedHeight(needed);
}

bool MonitorPanel::eventFilter(QObject* watched, QEvent* event) {
    if (event->type() == QEvent::Resize) {
        if (auto* label = qobject_cast<QLabel*>(watched); label != nullptr && label->wordWrap()) fitLabelHeight(label);
    }
    return QWidget::eventFilter(watched, event);
}

void MonitorPanel::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    // Beside the number the chart needs 200 px to show its labels; a narrow dock puts it below.
    const auto direction = width() < kSideBySideWidth ? QBoxLayout::TopToBottom : QBoxLayout::LeftToRight;
    if (rate_layout_->direction() != direction) rate_layout_->setDirection(direction);
}

void MonitorPanel::clear() {
    refresh_timer_->stop();
    phases_.clear();
    recent_rates_.clear();
    rate_points_.clear();
    samples_per_second_ = 0.0;
    replica_names_.clear();
    {
        const QSignalBlocker blocker(replica_);
        replica_->clear();
    }
    memory_->setDevices({});
    refreshNow();
}

void MonitorPanel::setReplicaNames(const std::vector<std::string>& devices) {
    replica_names_ = devices;
    ensureReplicaEntries(static_cast<int>(devices.size()));
    for (int r = 0; r < replica_->count(); ++r) {
        replica_->setItemText(r, r < static_cast<int>(devices.size())
                                     ? tr("Replica %1 · %2").arg(r).arg(QString::fromStdString(devices[static_cast<std::size_t>(r)]))
                                     : tr("Replica %1").arg(r));
    }
    fitPopupToChoices(replica_);
}

void MonitorPanel::ensureReplicaEntries(int replicas) {
    const QSignalBlocker blocker(replica_);
    const bool was_empty = replica_->count() == 0;
    while (replica_->count() < replicas) {
        const int r = replica_->count();
        replica_->addItem(r < static_cast<int>(replica_names_.size())
                              ? tr("Replica %1 · %2").arg(r).arg(QString::fromStdString(replica_names_[static_cast<std::size_t>(r)]))
                              : tr("Replica %1").arg(r));
    }
    if (was_empty && replica_->count() > 0) replica_->setCurrentIndex(0);
    fitPopupToChoices(replica_);
}

void MonitorPanel::addSteps(const std::vector<StepEndEvent>& steps) {
    for (const auto& step : steps) {
        if (phases_.size() < step.replicas.size()) phases_.resize(step.replicas.size());
        for (std::size_t r = 0; r < step.replicas.size(); ++r) {
            const PhaseTimings& t = step.replicas[r];
            PhaseSample sample;
            sample.step = static_cast<double>(step.global_step);
            sample.ms[0] = t.data_wait_ms;
            sample.ms[1] = t.forward_ms;
            sample.ms[2] = t.backward_ms;
            sample.ms[3] = t.allreduce_ms;
            sample.ms[4] = t.update_ms;
            phases_[r].push_back(sample);
            if (phases_[r].size() > kHistory) phases_[r].pop_front();
        }
        recent_rates_.push_back(step.samples_per_second);
        if (recent_rates_.size() > kRateWindow) recent_rates_.pop_front();
        samples_per_second_ = std::accumulate(recent_rates_.begin(), recent_rates_.end(), 0.0) /
                              static_cast<double>(recent_rates_.size());
        rate_points_.emplace_back(static_cast<double>(step.global_step), samples_per_second_);
        if (rate_points_.size() > kHistory) rate_points_.pop_front();
    }
    ensureReplicaEntries(static_cast<int>(phases_.size()));
    scheduleRefresh();
}

void MonitorPanel::setMemory(const MemoryEvent& event) {
    memory_->setDevices(event.devices);
}

void MonitorPanel::scheduleRefresh() {
    if (refresh_timer_->isActive()) return;
    if (controller_ != nullptr) refresh_timer_->setInterval(controller_->refreshIntervalMs());
    refresh_timer_->start();
}

int MonitorPanel::deviceRowCount() const { return static_cast<int>(memory_->devices().size()); }

std::int64_t MonitorPanel::shownBytesInUse(int device) const {
    const auto& devices = memory_->devices();
    if (device < 0 || device >= static_cast<int>(devices.size())) return -1;
    return devices[static_cast<std::size_t>(device)].bytes_in_use;
}

QStringList MonitorPanel::shownDeviceLines(int device) const {
    const auto& devices = memory_->devices();
    if (device < 0 || device >= static_cast<int>(devices.size())) return {};
    const int width = memory_->width();
    return memory_->textLines(devices[static_cast<std::size_t>(device)], width, memory_->twoLines(width));
}

QString MonitorPanel::shownDeviceText(int device) const {
    const auto& devices = memory_->devices();
    if (device < 0 || device >= static_cast<int>(devices.size())) return {};
    return memory_->describe(devices[static_cast<std::size_t>(device)]);
}

int MonitorPanel::phaseSampleCount() const { return static_cast<int>(phase_upper_.front()->count()); }

double MonitorPanel::samplesPerSecond() const { return samples_per_second_; }

QString MonitorPanel::summary(const PhaseSample* last, int replica, double total_ms) const {
    QStringList parts;
    for (int phase = 0; phase < kPhases; ++phase) {
        QString part = QStringLiteral("<span style=\"color:%1\">&#9632;</span>&nbsp;%2")
                           .arg(kPhaseColours[static_cast<std::size_t>(phase)].name(), phase_name(phase).toHtmlEscaped());
        if (last != nullptr) part += QStringLiteral("&nbsp;") + ms_text(last->ms[phase]).toHtmlEscaped();
        parts << QStringLiteral("<span style=\"white-space:nowrap\">%1</span>").arg(part);
    }
    const QString head = last == nullptr ? tr("No steps yet.")
                                         : tr("Step %1 on replica %2, total %3:")
                                               .arg(static_cast<qint64>(last->step))
                                               .arg(replica)
                                               .arg(ms_text(total_ms));
    return head.toHtmlEscaped() + QStringLiteral(" ") + parts.join(QStringLiteral(" &middot; "));
}

void MonitorPanel::refreshNow() {
    refresh_timer_->stop();
    // QtCharts recomputes a series' geometry (with an outline stroked around every point, for hit
    // tests) whenever its points change and, for every series of a chart, whenever an axis range
    // does: set after the new points, the moving x axis recomputed each series again. Emptied first,
    // the series cost nothing while the axes move, and each is computed once, with its new points
    // (this outline took a quarter of the GUI thread's time during training).
    rate_series_->clear();
    for (int phase = 0; phase < kPhases; ++phase) {
        phase_upper_[static_cast<std::size_t>(phase)]->clear();
        if (phase > 0) phase_lower_[static_cast<std::size_t>(phase)]->clear();
    }

    // Throughput.
    rate_label_->setText(recent_rates_.empty() ? tr("—") : QLocale().toString(samples_per_second_, 'f', 0));
    QList<QPointF> rate(rate_points_.begin(), rate_points_.end());
    if (rate.isEmpty()) {
        rate_x_->setRange(0, 1);
        rate_x_->setTickCount(2);
        set_nice_range(rate_y_, 1.0, 2);
    } else {
        double top = 1.0;
        for (const auto& p : rate) top = std::max(top, p.y());
        rate_x_->setRange(rate.front().x(), std::max(rate.back().x(), rate.front().x() + 1));
        rate_x_->setTickCount(3);
        set_nice_range(rate_y_, top * 1.05, 2);
    }
    rate_series_->replace(rate);

    // Phases of the selected replica, stacked: each phase's top is the sum of the phases below.
    const int replica = replica_->currentIndex();
    const std::deque<PhaseSample>* samples =
        replica >= 0 && replica < static_cast<int>(phases_.size()) ? &phases_[static_cast<std::size_t>(replica)] : nullptr;
    std::vector<QList<QPointF>> tops(kPhases);
    std::vector<double> totals;
    if (samples != nullptr) {
        for (auto& top : tops) top.reserve(static_cast<qsizetype>(samples->size()));
        for (const auto& sample : *samples) {
            double sum = 0.0;
            for (int phase = 0; phase < kPhases; ++phase) {
                sum += sample.ms[phase];
                tops[static_cast<std::size_t>(phase)].append(QPointF(sample.step, sum));
            }
            totals.push_back(sum);
        }
    }
    if (totals.empty()) {
        phase_x_->setRange(0, 1);
        phase_x_->setTickCount(2);
        set_nice_range(phase_y_, 1.0);
        phase_summary_->setText(summary(nullptr, 0, 0.0));
        keepWrappedTextTall();
        return;
    }
    // One slow step (the first one builds everything) would flatten the rest: clip rare outliers.
    std::vector<double> sorted = totals;
    std::sort(sorted.begin(), sorted.end());
    const double p90 = sorted[static_cast<std::size_t>(0.9 * static_cast<double>(sorted.size() - 1))];
    double top = sorted.back();
    if (top > 4.0 * p90 && p90 > 0) top = 1.5 * p90;
    phase_x_->setRange(samples->front().step, std::max(samples->back().step, samples->front().step + 1));
    // Whole steps only: never more ticks than steps, or "%d" prints the same step twice.
    phase_x_->setTickCount(static_cast<int>(std::clamp(samples->back().step - samples->front().step + 1.0, 2.0, 5.0)));
    set_nice_range(phase_y_, top * 1.05);
    for (int phase = 0; phase < kPhases; ++phase) {
        phase_upper_[static_cast<std::size_t>(phase)]->replace(tops[static_cast<std::size_t>(phase)]);
        if (phase > 0) phase_lower_[static_cast<std::size_t>(phase)]->replace(tops[static_cast<std::size_t>(phase - 1)]);
    }

    const PhaseSample& last = samples->back();
    phase_summary_->setText(summary(&last, replica, totals.back()));
    keepWrappedTextTall();
}

}  // namespace mirrorlab::ui

#include "ui/training/log_panel.h"

#include <QComboBox>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QTime>
#include <QVBoxLayout>

#include "ui/common/theme.h"
#include "ui/training/training_controller.h"

namespace mirrorlab::ui {

namespace {
// Chosen on white and moved onto the palette (ui/common/theme.h): dark text stays readable on a dark log.
QString level_colour(LogLevel level, const QPalette& palette) {
    switch (level) {
        case LogLevel::Warning: return onPalette(QColor(0xa0, 0x5a, 0x00), palette).name();
        case LogLevel::Error: return onPalette(QColor(0xb0, 0x00, 0x20), palette).name();
        default: return palette.color(QPalette::Text).name();
    }
}
}  // namespace

LogPanel::LogPanel(TrainingController* controller, QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    // Thin margins: the log starts as a strip of a few lines under the charts.
    layout->setContentsMargins(4, 2, 4, 2);
    layout->setSpacing(2);
    auto* bar = new QHBoxLayout;
    auto* show_label = new QLabel(tr("Show:"), this);
    bar->addWidget(show_label);
    filter_ = new QComboBox(this);
    filter_->setObjectName(QStringLiteral("logFilter"));
    filter_->setToolTip(tr("Which lines the log shows"));
    show_label->setBuddy(filter_);
    filter_->addItem(tr("Everything"));
    filter_->addItem(tr("Warnings and errors"));
    filter_->addItem(tr("Errors"));
    bar->addWidget(filter_);
    bar->addStretch(1);
    auto* clear = new QPushButton(tr("Clear"), this);
    clear->setToolTip(tr("Empty the log"));
    bar->addWidget(clear);
    layout->addLayout(bar);
    view_ = new QPlainTextEdit(this);
    view_->setObjectName(QStringLiteral("logView"));
    view_->setAccessibleName(tr("Log"));
    view_->setToolTip(tr("The engine's log lines, as TensorFlow would print them"));
    view_->setReadOnly(true);
    view_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    view_->setMaximumBlockCount(20000);
    layout->addWidget(view_);

    connect(filter_, &QComboBox::currentIndexChanged, this, &LogPanel::rebuild);
    connect(clear, &QPushButton::clicked, this, [this] {
        lines_.clear();
        rebuild();
    });
    if (controller != nullptr) {
        connect(controller, &TrainingController::logLine, this,
                [this](const LogEvent& event) { append(event.level, QString::fromStdString(event.text)); });
        connect(controller, &TrainingController::runStarted, this,
                [this](int id) { append(LogLevel::Info, tr("Run %1 started").arg(id)); });
    }
}

void LogPanel::append(LogLevel level, const QString& text) {
    const QString stamped = QTime::currentTime().toString(QStringLiteral("HH:mm:ss")) + QLatin1Char(' ') + text;
    lines_.push_back({level, stamped});
    const int minimum = filter_->currentIndex();
    const int rank = level == LogLevel::Error ? 2 : level == LogLevel::Warning ? 1 : 0;
    if (rank < minimum) return;
    QScrollBar* scroll = view_->verticalScrollBar();
    const bool at_end = scroll->value() == scroll->maximum();
    view_->appendHtml(QStringLiteral("<span style=\"color:%1\">%2</span>").arg(level_colour(level, view_->palette()), stamped.toHtmlEscaped()));
    if (at_end) scroll->setValue(scroll->maximum());
}

QString LogPanel::plainText() const {
    QStringList all;
    for (const auto& line : lines_) all << line.text;
    return all.join(QLatin1Char('\n'));
}

void LogPanel::rebuild() {
    view_->clear();
    const std::vector<Line> lines = std::move(lines_);
    lines_.clear();
    for (const auto& line : lines) {
        lines_.push_back(line);
        const int rank = line.level == LogLevel::Error ? 2 : line.level == LogLevel::Warning ? 1 : 0;
        if (rank >= filter_->currentIndex()) {
            view_->appendHtml(QStringLiteral("<span style=\"color:%1\">%2</span>").arg(level_colour(line.level, view_->palette()), line.text.toHtmlEscaped()));
        }
    }
}

}  // namespace mirrorlab::ui

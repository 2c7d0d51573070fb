#pragma once
// The engine's log lines (device placement, strategy, all-reduce algorithm, warnings, errors),
// coloured by level, with a level filter.
#include <QWidget>

#include "core/train/events.h"

class QComboBox;
class QPlainTextEdit;

namespace mirrorlab::ui {

class TrainingController;

class LogPanel : public QWidget {
    Q_OBJECT
public:
    explicit LogPanel(TrainingController* controller, QWidget* parent = nullptr);

    void append(LogLevel level, const QString& text);
    QString plainText() const;  // everything logged, unfiltered (tests, copy)

private:
    void rebuild();

    struct Line {
        LogLevel level;
        QString text;
    };
    QComboBox* filter_ = nullptr;
    QPlainTextEdit* view_ = nullptr;
    std::vector<Line> lines_;
};

}  // namespace mirrorlab::ui

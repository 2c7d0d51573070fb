#pragma once
// "Try it": a person pastes a newswire and sees which topics the latest trained model picks (the
// top five as bars) and which of the text's words the model cannot see (not in the data set's
// vocabulary, or beyond the Embedding: they all become the OOV id). One text takes milliseconds,
// so it runs on the GUI thread, on the CPU, with the controller's device registry.
#include <QWidget>

#include <memory>
#include <vector>

#include "core/data/dataset.h"
#include "core/device/device.h"
#include "core/model/model.h"

class QBoxLayout;
class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTextBrowser;
class QTimer;

namespace mirrorlab::ui {

class TrainingController;

class TryItPanel : public QWidget {
    Q_OBJECT
public:
    static constexpr int kTopics = 5;
    static constexpr int kDebounceMs = 300;

    explicit TryItPanel(TrainingController* controller, QWidget* parent = nullptr);

    void setText(const QString& text);
    // Classifies the text now (the button; typing does it after kDebounceMs of quiet).
    void classify();

    // What a person sees, for tests: the status line (an error sentence, or the word counts), the
    // bars' class names and probabilities (empty while there is no answer), and the words view.
    QString statusText() const;
    QStringList topicNames() const;
    std::vector<double> topicProbabilities() const;
    QTextBrowser* wordsView() const { return words_; }
    static QString unknownWordToolTip();

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    // The latest finished run's model, data and weights, taken when the run ends: a run that is
    // still going has no final weights yet, and the model of the run before it stays usable.
    void takeLatestRun();
    void showError(const QString& sentence);
    void showWords(const std::vector<std::string>& words, const std::vector<bool>& known);

    TrainingController* controller_ = nullptr;
    std::shared_ptr<const Model> model_;
    std::shared_ptr<const DatasetSplit> data_;
    std::vector<float> weights_;
    bool trained_elsewhere_ = false;  // the last run trained in another process, its model not here
    DeviceConfig cpu_;

    QPlainTextEdit* text_ = nullptr;
    QPushButton* classify_ = nullptr;
    QLabel* status_ = nullptr;
    QTextBrowser* words_ = nullptr;
    QTimer* debounce_ = nullptr;
    QBoxLayout* layout_ = nullptr;  // its direction follows the panel's shape
    struct Bar {
        QLabel* name = nullptr;
        QProgressBar* bar = nullptr;
    };
    std::vector<Bar> bars_;
};

}  // namespace mirrorlab::ui

#include "ui/inspect/try_it_panel.h"

#include <QAbstractTextDocumentLayout>
#include <QBoxLayout>
#include <QGridLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollBar>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextCursor>
#include <QTimer>
#include <QToolTip>
#include <QVBoxLayout>

#include <exception>

#include "core/data/sequence.h"
#include "core/data/text_encoding.h"
#include "core/train/inference.h"
#include "ui/inspect/class_names.h"
#include "ui/training/training_controller.h"

namespace mirrorlab::ui {

namespace {

constexpr int kBarSteps = 1000;  // a bar's range: probabilities to 0.1 %

// The text's words, the unknown ones struck through: a tooltip on those says why, read from the
// character format under the mouse (rich text has no tooltips of its own).
class WordsView : public QTextBrowser {
public:
    using QTextBrowser::QTextBrowser;

protected:
    bool viewportEvent(QEvent* event) override {
        if (event->type() != QEvent::ToolTip) return QTextBrowser::viewportEvent(event);
        auto* help = static_cast<QHelpEvent*>(event);
        const QPointF at = QPointF(help->pos()) + QPointF(horizontalScrollBar()->value(), verticalScrollBar()->value());
        const int position = document()->documentLayout()->hitTest(at, Qt::ExactHit);
        const QTextBlock block = position < 0 ? QTextBlock() : document()->findBlock(position);
        for (auto it = block.begin(); block.isValid() && !it.atEnd(); ++it) {
            const QTextFragment fragment = it.fragment();
            if (fragment.contains(position) && !fragment.charFormat().toolTip().isEmpty()) {
                QToolTip::showText(help->globalPos(), fragment.charFormat().toolTip(), this);
                return true;
            }
        }
        QToolTip::hideText();
        event->ignore();
        return true;
    }
};

}  // namespace

TryItPanel::TryItPanel(TrainingController* controller, QWidget* parent)
    : QWidget(parent), controller_(controller), cpu_(DeviceConfig::parse("cpu")) {
    text_ = new QPlainTextEdit(this);
    text_->setObjectName(QStringLiteral("tryItText"));
    text_->setAccessibleName(tr("Newswire to classify"));
    text_->setToolTip(tr("Paste or type a newswire; the topics update as you type"));
    text_->setPlaceholderText(tr("Paste a newswire here…"));
    text_->setTabChangesFocus(true);  // Tab walks the panels, as everywhere else
    classify_ = new QPushButton(tr("Classify"), this);
    classify_->setObjectName(QStringLiteral("tryItClassify"));
    classify_->setAccessibleName(tr("Classify the newswire"));
    classify_->setToolTip(tr("Ask the latest trained model which topics the newswire is about"));
    auto* input = new QVBoxLayout;
    input->addWidget(text_, 1);
    input->addWidget(classify_, 0, Qt::AlignLeft);

    auto* bars = new QGridLayout;
    bars->setVerticalSpacing(2);
    for (int i = 0; i < kTopics; ++i) {
        Bar bar;
        bar.name = new QLabel(this);
        bar.name->setObjectName(QStringLiteral("tryItTopic%1").arg(i));
        bar.bar = new QProgressBar(this);
        bar.bar->setObjectName(QStringLiteral("tryItBar%1").arg(i));
        bar.bar->setRange(0, kBarSteps);
        bar.bar->setTextVisible(true);
        bar.bar->setMinimumWidth(120);
        bars->addWidget(bar.name, i, 0);
        bars->addWidget(bar.bar, i, 1);
        bars_.push_back(bar);
    }
    bars->setColumnStretch(1, 1);
    bars->setRowStretch(kTopics, 1);

    status_ = new QLabel(this);
    status_->setObjectName(QStringLiteral("tryItStatus"));
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    words_ = new WordsView(this);
    words_->setObjectName(QStringLiteral("tryItWords"));
    words_->setAccessibleName(tr("The newswire's words"));
    words_->setToolTip(tr("The words the model read; struck-through words are not in the vocabulary"));
    words_->setTabChangesFocus(true);
    words_->setMinimumHeight(40);
    auto* answer = new QVBoxLayout;
    answer->addWidget(status_);
    answer->addWidget(words_, 1);

    layout_ = new QBoxLayout(QBoxLayout::LeftToRight, this);
    layout_->addLayout(input, 3);
    layout_->addLayout(bars, 2);
    layout_->addLayout(answer, 3);

    debounce_ = new QTimer(this);
    debounce_->setSingleShot(true);
    debounce_->setInterval(kDebounceMs);
    connect(debounce_, &QTimer::timeout, this, &TryItPanel::classify);
    connect(text_, &QPlainTextEdit::textChanged, debounce_, qOverload<>(&QTimer::start));
    connect(classify_, &QPushButton::clicked, this, &TryItPanel::classify);
    connect(controller_, &TrainingController::runFinished, this, [this] {
        takeLatestRun();
        classify();
    });
    connect(controller_, &TrainingController::lastRunDeleted, this, [this] {
        model_.reset();
        data_.reset();
        weights_.clear();
        trained_elsewhere_ = false;
        classify();
    });
    takeLatestRun();
    classify();
}

// Side by side in a wide strip (a bottom dock), one under the other in a tall column (a side dock):
// three columns of a 500 px column would leave each a few words wide.
void TryItPanel::resizeEvent(QResizeEvent* event) {
    const bool tall = height() > width() / 2;
    const auto direction = tall ? QBoxLayout::TopToBottom : QBoxLayout::LeftToRight;
    if (layout_->direction() != direction) {
        layout_->setDirection(direction);
        layout_->setStretch(1, tall ? 0 : 2);  // the bars: as tall as their five rows
    }
    QWidget::resizeEvent(event);
}

QString TryItPanel::unknownWordToolTip() { return tr("not in the vocabulary: mapped to the OOV id"); }

void TryItPanel::setText(const QString& text) { text_->setPlainText(text); }

void TryItPanel::takeLatestRun() {
    // Between runs only: a run in progress has not yet handed over its weights.
    if (controller_->state() != TrainingController::State::Idle) return;
    std::vector<float> weights = controller_->lastWeights();
    if (weights.empty() || !controller_->lastModel() || !controller_->lastData()) {
        // A run followed from another process: answering with an earlier run's model would pass
        // it off as this one's.
        if (controller_->following()) {
            model_.reset();
            data_.reset();
            weights_.clear();
            trained_elsewhere_ = true;
        }
        return;
    }
    trained_elsewhere_ = false;
    model_ = controller_->lastModel();
    data_ = controller_->lastData();
    weights_ = std::move(weights);
}

void TryItPanel::classify() {
    debounce_->stop();
    if (!model_) {
        showError(trained_elsewhere_ ? tr("The last run trained in another process, which keeps its model: train or resume "
                                          "a run here to try it.")
                                     : tr("Train a model first: when a run ends, its model answers here."));
        return;
    }
    const QString text = text_->toPlainText();
    if (text.trimmed().isEmpty()) {
        showError(tr("Paste or type a newswire to see which topics the model picks."));
        return;
    }
    try {
        const EncodedText encoded = encode_text(data_->train, text.toStdString(), model_->vocabulary_size());
        if (encoded.words.empty()) {
            showError(tr("The text has no words, only punctuation: there is nothing to classify."));
            return;
        }
        const PaddedSequences ids = pad_sequences({encoded.ids}, model_->input_length());
        const Predictions predictions =
            run_inference(*model_, weights_, ids, nullptr, *controller_->registry(), cpu_, 1);
        const auto top = top_classes(predictions, 0, kTopics);
        for (std::size_t i = 0; i < bars_.size(); ++i) {
            const bool shown = i < top.size();
            bars_[i].name->setVisible(shown);
            bars_[i].bar->setVisible(shown);
            if (!shown) continue;
            const auto [label, probability] = top[i];
            bars_[i].name->setText(className(data_->train.class_names, label));
            bars_[i].bar->setValue(static_cast<int>(probability * kBarSteps + 0.5f));
            bars_[i].bar->setFormat(QStringLiteral("%1%").arg(100.0 * probability, 0, 'f', 1));
            bars_[i].bar->setToolTip(tr("%1: probability %2").arg(bars_[i].name->text(), bars_[i].bar->format()));
        }
        const auto unknown = static_cast<int>(encoded.unknown_count);
        const auto words = static_cast<qsizetype>(encoded.words.size());
        status_->setText(unknown == 0 ? tr("Words: %1, all in the vocabulary.").arg(words)
                                      : tr("Words: %1; not in the vocabulary: %2 (struck through).").arg(words).arg(unknown));
        showWords(encoded.words, encoded.known);
    } catch (const std::exception& error) {
        showError(QString::fromStdString(error.what()));
    }
}

void TryItPanel::showError(const QString& sentence) {
    status_->setText(sentence);
    for (const Bar& bar : bars_) {
        bar.name->clear();
        bar.name->setVisible(false);
        bar.bar->setVisible(false);
    }
    words_->clear();
}

void TryItPanel::showWords(const std::vector<std::string>& words, const std::vector<bool>& known) {
    words_->clear();
    QTextCursor cursor(words_->document());
    QTextCharFormat plain;
    QTextCharFormat unknown;
    unknown.setFontStrikeOut(true);
    unknown.setForeground(palette().color(QPalette::PlaceholderText));
    unknown.setToolTip(unknownWordToolTip());
    for (std::size_t i = 0; i < words.size(); ++i) {
        if (i > 0) cursor.insertText(QStringLiteral(" "), plain);
        cursor.insertText(QString::fromStdString(words[i]), i < known.size() && known[i] ? plain : unknown);
    }
    words_->moveCursor(QTextCursor::Start);
}

QString TryItPanel::statusText() const { return status_->text(); }

QStringList TryItPanel::topicNames() const {
    QStringList names;
    for (const Bar& bar : bars_) {
        if (!bar.name->text().isEmpty()) names << bar.name->text();
    }
    return names;
}

std::vector<double> TryItPanel::topicProbabilities() const {
    std::vector<double> probabilities;
    for (const Bar& bar : bars_) {
        if (!bar.name->text().isEmpty()) probabilities.push_back(static_cast<double>(bar.bar->value()) / kBarSteps);
    }
    return probabilities;
}

}  // namespace mirrorlab::ui

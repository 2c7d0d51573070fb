// The Simplified Chinese translation: every message finished and keeping its placeholders, tags
// and mnemonics; every tr() string of the UI present (lupdate run afresh over the sources); and
// the application switched to zh_CN shows Chinese, switched back shows English.
#include <QtTest>

#include <QAction>
#include <QDir>
#include <QDirIterator>
#include <QDockWidget>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QSet>
#include <QSettings>
#include <QTemporaryDir>
#include <QToolBar>
#include <QXmlStreamReader>

#include "ui/common/translation.h"
#include "ui/main_window.h"
#include "ui/teaching/step_view.h"
#include "ui/training/training_panel.h"

using namespace mirrorlab::ui;

namespace {

struct Message {
    QString context;
    QString source;
    QStringList translations;  // one, or one per numerus form
    QString type;              // "", "unfinished", "vanished", "obsolete"
};

QList<Message> read_ts(const QString& path, QString* error) {
    QList<Message> messages;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        *error = file.errorString();
        return messages;
    }
    QXmlStreamReader xml(&file);
    QString context;
    Message current;
    while (!xml.atEnd()) {
        xml.readNext();
        if (xml.isStartElement()) {
            const auto name = xml.name();
            if (name == QLatin1String("name")) {
                context = xml.readElementText();
            } else if (name == QLatin1String("message")) {
                current = Message{context, {}, {}, {}};
            } else if (name == QLatin1String("source")) {
                current.source = xml.readElementText();
            } else if (name == QLatin1String("translation")) {
                current.type = xml.attributes().value(QLatin1String("type")).toString();
                if (xml.attributes().value(QLatin1String("numerus")).isEmpty()) {
                    // Plain messages: the text; numerus ones hold <numerusform> children.
                    QString text;
                    bool numerus = false;
                    while (!(xml.isEndElement() && xml.name() == QLatin1String("translation")) && !xml.atEnd()) {
                        xml.readNext();
                        if (xml.isCharacters()) text += xml.text();
                        if (xml.isStartElement() && xml.name() == QLatin1String("numerusform")) {
                            numerus = true;
                            current.translations << xml.readElementText();
                        }
                    }
                    if (!numerus) current.translations << text;
                }
            }
        } else if (xml.isEndElement() && xml.name() == QLatin1String("message")) {
            messages << current;
        }
    }
    if (xml.hasError()) *error = xml.errorString();
    return messages;
}

QSet<QString> placeholders(const QString& text) {
    QSet<QString> found;
    static const QRegularExpression pattern(QStringLiteral("%(\\d+|n)"));
    for (const auto& match : pattern.globalMatch(text)) found.insert(match.captured(0));
    return found;
}

QStringList tags(const QString& text) {
    QStringList found;
    static const QRegularExpression pattern(QStringLiteral("</?[a-zA-Z][a-zA-Z0-9]*>"));
    for (const auto& match : pattern.globalMatch(text)) found << match.captured(0);
    found.sort();
    return found;
}

bool has_mnemonic(const QString& text) {
    static const QRegularExpression pattern(QStringLiteral("&[^& ]"));
    return pattern.match(text).hasMatch();
}

bool has_chinese(const QString& text) {
    return std::any_of(text.begin(), text.end(), [](QChar c) { return c.unicode() >= 0x4E00 && c.unicode() <= 0x9FFF; });
}

}  // namespace

class TestTranslation : public QObject {
    Q_OBJECT
private slots:
    void everyMessageIsTranslated() {
        QString error;
        const QList<Message> messages = read_ts(QStringLiteral(MIRRORLAB_TS_FILE), &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QVERIFY(messages.size() > 300);  // the whole UI, not a sample
        QStringList problems;
        for (const Message& m : messages) {
            const QString where = m.context + QStringLiteral(": \"") + m.source.left(60) + QStringLiteral("\"");
            if (!m.type.isEmpty()) {
                problems << where + QStringLiteral(" is ") + m.type;
                continue;
            }
            if (m.translations.isEmpty() || m.translations.front().trimmed().isEmpty()) {
                problems << where + QStringLiteral(" has no translation");
                continue;
            }
            for (const QString& t : m.translations) {
                if (placeholders(t) != placeholders(m.source)) problems << where + QStringLiteral(" changes the placeholders: ") + t;
                if (tags(t) != tags(m.source)) problems << where + QStringLiteral(" changes the markup: ") + t;
                if (has_mnemonic(m.source) && !has_mnemonic(t)) problems << where + QStringLiteral(" loses its shortcut (&): ") + t;
                // English words left in place of Chinese (punctuation-only patterns such as "%1: %2" are fine).
                static const QRegularExpression word(QStringLiteral("[a-z]{3,}"));
                if (!has_chinese(t) && word.match(t).hasMatch()) problems << where + QStringLiteral(" looks untranslated: ") + t;
            }
        }
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('\n'))));
    }

    void everyUiStringIsInTheTranslation() {
        const QString lupdate = QStringLiteral(MIRRORLAB_LUPDATE);
        if (lupdate.isEmpty() || lupdate.endsWith(QStringLiteral("NOTFOUND")) || !QFile::exists(lupdate)) {
            QSKIP("lupdate not found (Debian: qt6-l10n-tools)");
        }
        QTemporaryDir dir;
        const QString fresh = dir.filePath(QStringLiteral("fresh_zh_CN.ts"));
        QProcess process;
        // As the build's lupdate target runs it: the files named, with the include path, so that
        // classes in namespaces get their full context ("mirrorlab::ui::StepView").
        const QDir ui(QStringLiteral(MIRRORLAB_UI_SOURCE_DIR));
        QStringList arguments{QStringLiteral("-silent"), QStringLiteral("-locations"), QStringLiteral("none"), QStringLiteral("-I"),
                              QDir::cleanPath(ui.absoluteFilePath(QStringLiteral(".."))), QStringLiteral("-tr-function-alias"),
                              QStringLiteral("QT_TRANSLATE_NOOP+=MIRRORLAB_TRANSLATABLE")};
        // Every feature folder of ui/ (ui/CMakeLists.txt globs them recursively too).
        QStringList ui_files;
        QDirIterator it(ui.absolutePath(), {QStringLiteral("*.cpp"), QStringLiteral("*.h")}, QDir::Files, QDirIterator::Subdirectories);
        while (it.hasNext()) ui_files << it.next();
        ui_files.sort();
        QVERIFY2(ui_files.size() > 20, qPrintable(ui.absolutePath()));
        arguments << ui_files;
        // The layer registry's form texts (core/layers, marked MIRRORLAB_TRANSLATABLE).
        const QDir layers(ui.absoluteFilePath(QStringLiteral("../core/layers")));
        for (const QString& file : layers.entryList({QStringLiteral("*.cpp")}, QDir::Files, QDir::Name)) {
            arguments << layers.absoluteFilePath(file);
        }
        arguments << QStringLiteral(MIRRORLAB_GUI_MAIN) << QStringLiteral("-ts") << fresh;
        process.setProcessChannelMode(QProcess::SeparateChannels);  // lupdate's notes on stderr are not the result
        process.start(lupdate, arguments);
        QVERIFY(process.waitForFinished(120000));
        QVERIFY2(process.exitCode() == 0, process.readAllStandardError().constData());
        QString error;
        const QList<Message> wanted = read_ts(fresh, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const QList<Message> shipped = read_ts(QStringLiteral(MIRRORLAB_TS_FILE), &error);
        QSet<QString> have;
        for (const Message& m : shipped) {
            if (m.type.isEmpty()) have.insert(m.context + QLatin1Char('\x1f') + m.source);
        }
        QStringList missing;
        for (const Message& m : wanted) {
            if (!have.contains(m.context + QLatin1Char('\x1f') + m.source)) missing << m.context + QStringLiteral(": ") + m.source;
        }
        QVERIFY2(missing.isEmpty(), qPrintable(QStringLiteral("not translated yet (run the update_translations target, then "
                                                              "translate resources/translations/mirrorlab_zh_CN.ts):\n") +
                                               missing.join(QLatin1Char('\n'))));
    }

    void theAppSpeaksChinese() {
        QVERIFY(availableLanguages().contains(QStringLiteral("zh_CN")));
        QCOMPARE(installTranslation(QStringLiteral("zh_CN")), QStringLiteral("zh_CN"));
        const QString scope = QStringLiteral("MirrorLab-test-translation-%1").arg(QCoreApplication::applicationPid());
        {
            MainWindow window(nullptr, scope);
            auto* toolbar = window.findChild<QToolBar*>(QStringLiteral("trainingToolbar"));
            QVERIFY(toolbar != nullptr);
            QVERIFY(has_chinese(toolbar->windowTitle()));
            for (const char* name : {"startAction", "pauseAction", "stopAction"}) {
                auto* action = window.findChild<QAction*>(QLatin1String(name));
                QVERIFY(action != nullptr);
                QVERIFY2(has_chinese(action->text()), qPrintable(action->text()));
            }
            QCOMPARE(window.findChild<QAction*>(QStringLiteral("startAction"))->text(), QStringLiteral("开始"));
            for (auto* dock : window.findChildren<QDockWidget*>()) QVERIFY2(has_chinese(dock->windowTitle()), qPrintable(dock->windowTitle()));
            QVERIFY(has_chinese(window.windowTitle()));
        }
        QVERIFY(has_chinese(StepView::stageName(StepView::Stage::WaitForEveryone)));
        for (const auto reason : {mirrorlab::FinishReason::Completed, mirrorlab::FinishReason::EarlyStopping,
                                  mirrorlab::FinishReason::StoppedByUser}) {
            mirrorlab::FinishedEvent finished;
            finished.reason = reason;
            finished.epochs_completed = 3;
            const QString summary = TrainingPanel::finishedSummary(finished);
            QVERIFY2(has_chinese(summary) && summary.contains(QLatin1Char('3')), qPrintable(summary));
        }
        QString warning;
        QCOMPARE(installTranslation(QStringLiteral("zh"), &warning), QStringLiteral("zh_CN"));
        QVERIFY(warning.isEmpty());

        // Back to English; a language without a translation falls back to English and says so.
        QCOMPARE(installTranslation(QStringLiteral("en"), &warning), QStringLiteral("en"));
        {
            MainWindow window(nullptr, scope);
            QCOMPARE(window.findChild<QAction*>(QStringLiteral("startAction"))->text(), QStringLiteral("Start"));
        }
        QCOMPARE(StepView::stageName(StepView::Stage::WaitForEveryone), QStringLiteral("Wait for everyone"));
        QCOMPARE(installTranslation(QStringLiteral("fr"), &warning), QStringLiteral("en"));
        QVERIFY(warning.contains(QStringLiteral("fr")));
        QSettings(QStringLiteral("MirrorLab"), scope).clear();
    }
};

QTEST_MAIN(TestTranslation)
#include "test_translation.moc"

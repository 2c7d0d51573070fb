#include "ui/common/translation.h"

#include <QCoreApplication>
#include <QDir>
#include <QLibraryInfo>
#include <QLocale>
#include <QTranslator>

namespace mirrorlab::ui {

namespace {
QTranslator* app_translator = nullptr;
QTranslator* qt_translator = nullptr;

void remove(QTranslator*& translator) {
    if (translator == nullptr) return;
    QCoreApplication::removeTranslator(translator);
    delete translator;
    translator = nullptr;
}
}  // namespace

QStringList availableLanguages() {
    QStringList languages{QStringLiteral("en")};
    for (const QString& file : QDir(QStringLiteral(":/i18n")).entryList({QStringLiteral("mirrorlab_*.qm")}, QDir::Files, QDir::Name)) {
        languages << file.mid(10, file.size() - 13);  // "mirrorlab_" ... ".qm"
    }
    return languages;
}

QString installTranslation(const QString& language, QString* warning) {
    remove(app_translator);
    remove(qt_translator);
    const QLocale locale = language.isEmpty() ? QLocale::system() : QLocale(language);
    if (locale.language() == QLocale::English || locale.language() == QLocale::C) return QStringLiteral("en");
    auto* translator = new QTranslator(QCoreApplication::instance());
    if (!translator->load(locale, QStringLiteral("mirrorlab"), QStringLiteral("_"), QStringLiteral(":/i18n"))) {
        delete translator;
        if (warning != nullptr && !language.isEmpty()) {
            *warning = QStringLiteral("no translation for '%1' (available: %2); using English")
                           .arg(language, availableLanguages().join(QStringLiteral(", ")));
        }
        return QStringLiteral("en");
    }
    QCoreApplication::installTranslator(translator);
    app_translator = translator;
    auto* qt = new QTranslator(QCoreApplication::instance());
    if (qt->load(locale, QStringLiteral("qtbase"), QStringLiteral("_"), QLibraryInfo::path(QLibraryInfo::TranslationsPath))) {
        QCoreApplication::installTranslator(qt);
        qt_translator = qt;
    } else {
        delete qt;
    }
    const QString file = translator->filePath();
    const qsizetype start = file.lastIndexOf(QStringLiteral("mirrorlab_")) + 10;
    return file.mid(start, file.size() - start - 3);
}

}  // namespace mirrorlab::ui

#pragma once
// The interface language. English is the source language; translations are compiled from
// resources/translations/*.ts into the binary (":/i18n/mirrorlab_<lang>.qm"). Qt's own strings
// (standard dialogs) are translated too where the system has Qt's translations installed.
#include <QString>
#include <QStringList>

namespace mirrorlab::ui {

// "en" and every embedded translation ("zh_CN").
QStringList availableLanguages();

// Switches the application's translators to `language` ("zh_CN", "zh", "en"; empty: the system
// locale's language). Returns the language now in use ("en" when there is no translation for it;
// `warning` then says so, unless English was asked for). Call before building widgets: texts
// already shown do not change.
QString installTranslation(const QString& language, QString* warning = nullptr);

}  // namespace mirrorlab::ui

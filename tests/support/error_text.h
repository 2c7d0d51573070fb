#pragma once
// What a call threw, for tests that check an error message names what a user needs to know.
#include <QString>
#include <QStringList>
#include <QtTest>

#include <exception>
#include <utility>

#include "core/util/error.h"

// The message of the `E` the call threw; "wrong exception type: ..." for another exception, so a
// check for the expected words fails; empty when it threw nothing.
template <typename E = mirrorlab::Error, typename F>
QString error_of(F&& call) {
    try {
        std::forward<F>(call)();
    } catch (const E& error) {
        return QString::fromStdString(error.what());
    } catch (const std::exception& error) {
        return "wrong exception type: " + QString::fromStdString(error.what());
    }
    return {};
}

// Fails the test, naming the part and the message, unless every part is in the message.
inline void verify_contains(const QString& message, const QStringList& parts) {
    if (message.isEmpty()) QFAIL("no error was thrown");
    for (const QString& part : parts) {
        if (!message.contains(part)) QFAIL(qPrintable("'" + part + "' is not in: " + message));
    }
}

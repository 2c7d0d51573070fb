#pragma once
// Where the tests find real data, and what they do when it is missing. CTest counts QSKIP as a
// pass, so a check on real data that skipped for want of the files would read as a pass; with
// MIRRORLAB_REQUIRE_REAL_DATA=1 (.ci/run sets it) a missing Reuters-21578 folder fails instead.
//
// Two kinds of real data, because a machine can have one and not the other:
//   - the Reuters-21578 SGML files (shared/data/reuters21578 beside the checkout; CI has them):
//     required by MIRRORLAB_REQUIRE_REAL_DATA=1;
//   - Keras' reuters.npz (~/.keras/datasets, found by find_keras_reuters()): it cannot be
//     downloaded on the project's machines, so only MIRRORLAB_REQUIRE_KERAS_NPZ=1 requires it, for
//     a person who has it and wants every comparison with it to run.
//
// Use REAL_DATA_MISSING / KERAS_NPZ_MISSING where a test would skip: they QSKIP, or QFAIL when
// that data is required, with the same message.
#include <QByteArray>
#include <QFileInfo>
#include <QString>
#include <QtGlobal>
#include <QtTest/QtTest>

namespace mirrorlab::testsupport {

inline bool real_data_required() {
    return qEnvironmentVariableIntValue("MIRRORLAB_REQUIRE_REAL_DATA") == 1;
}
inline bool keras_npz_required() {
    return qEnvironmentVariableIntValue("MIRRORLAB_REQUIRE_KERAS_NPZ") == 1;
}

// The Reuters-21578 folder: $MIRRORLAB_REUTERS21578_DIR (CTest sets it, tests/CMakeLists.txt), else
// shared/data/reuters21578 beside the checkout.
inline QString reuters21578_dir() {
    const QString from_environment = qEnvironmentVariable("MIRRORLAB_REUTERS21578_DIR");
    if (!from_environment.isEmpty()) return from_environment;
    return QStringLiteral(MIRRORLAB_SHARED_DIR "/data/reuters21578");
}
inline bool have_reuters21578() {
    return QFileInfo::exists(reuters21578_dir() + QStringLiteral("/reut2-000.sgm"));
}

}  // namespace mirrorlab::testsupport

// Inside a test function: skips with `message` (a QString or char*), or fails when the data is
// required. Both return from the test function.
#define MIRRORLAB_MISSING_DATA_(required, variable, message)                                     \
    do {                                                                                         \
        const QString mirrorlab_missing_message_ = QString(message);                             \
        if (required)                                                                            \
            QFAIL(qPrintable(QStringLiteral(variable "=1, but ") + mirrorlab_missing_message_)); \
        QSKIP(qPrintable(mirrorlab_missing_message_));                                           \
    } while (false)
#define REAL_DATA_MISSING(message)                                          \
    MIRRORLAB_MISSING_DATA_(::mirrorlab::testsupport::real_data_required(), \
                            "MIRRORLAB_REQUIRE_REAL_DATA", message)
#define KERAS_NPZ_MISSING(message)                                          \
    MIRRORLAB_MISSING_DATA_(::mirrorlab::testsupport::keras_npz_required(), \
                            "MIRRORLAB_REQUIRE_KERAS_NPZ", message)

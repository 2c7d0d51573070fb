// The layering check the build runs (tests/layers/check_layers): the source tree keeps to the layers, and
// each kind of forbidden include, written into a small tree of its own, fails the check with the
// file, the line and the arrow; an allowance lets one include through and fails once it is stale.
#include <QtTest>

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>

namespace {

struct Result {
    int exit_code = -1;
    QString errors;
};

QStringList order_arguments() {
    return {QStringLiteral("--order"), QStringLiteral(MIRRORLAB_CORE_ORDER)};  // core/CMakeLists.txt's
}

Result run_check(const QString& root, QStringList extra = {}) {
    QProcess process;
    process.start(QStringLiteral(MIRRORLAB_CHECK_LAYERS), QStringList{QStringLiteral("--root"), root} + order_arguments() + extra);
    if (!process.waitForFinished(60000)) return {};
    return {process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1, QString::fromUtf8(process.readAllStandardError())};
}

void write(const QTemporaryDir& dir, const QString& path, const QByteArray& text) {
    const QString full = dir.filePath(path);
    QVERIFY(QDir().mkpath(QFileInfo(full).absolutePath()));
    QFile file(full);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(text);
}

// A tree that keeps to the layers: a lower module included from a higher one, core from ui and gpu.
void write_clean_tree(const QTemporaryDir& dir) {
    write(dir, QStringLiteral("core/util/error.h"), "#pragma once\n#include <string>\n");
    write(dir, QStringLiteral("core/train/trainer.h"), "#pragma once\n#include \"core/util/error.h\"\n#include \"core/train/events.h\"\n");
    write(dir, QStringLiteral("core/train/events.h"), "#pragma once\n");
    write(dir, QStringLiteral("ui/panel.cpp"), "#include <QWidget>\n#include \"core/train/trainer.h\"\n");
    write(dir, QStringLiteral("gpu/backend.cpp"), "#include <cuda_runtime.h>\n#include \"core/util/error.h\"\n");
    write(dir, QStringLiteral("app/main.cpp"), "#include \"ui/panel.h\"\n#include \"core/train/trainer.h\"\n");
}

}  // namespace

class TestLayerCheck : public QObject {
    Q_OBJECT
private slots:
    void theSourceTreeKeepsToTheLayers() {
        QStringList allowances;
        for (const QString& allowance : QStringLiteral(MIRRORLAB_CORE_ALLOWANCES).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
            allowances << QStringLiteral("--allow") << allowance;
        }
        const Result result = run_check(QStringLiteral(MIRRORLAB_SOURCE_DIR), allowances);
        QVERIFY2(result.exit_code == 0, qPrintable(result.errors));
    }

    void aCleanTreePasses() {
        QTemporaryDir dir;
        write_clean_tree(dir);
        const Result result = run_check(dir.path());
        QVERIFY2(result.exit_code == 0, qPrintable(result.errors));
    }

    void forbiddenIncludesFail_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QString>("message");
        QTest::newRow("upward in core") << QStringLiteral("core/util/thread_pool.cpp")
                                        << QByteArray("#include <vector>\n\n#include \"core/train/events.h\"\n")
                                        << QStringLiteral("core/util/thread_pool.cpp:3: error: forbidden include \"core/train/events.h\": "
                                                          "core/util -> core/train");
        QTest::newRow("upward, indented and spaced") << QStringLiteral("core/distribute/mirrored.h")
                                                     << QByteArray("#pragma once\n  #  include \"core/train/events.h\"  // the events\n")
                                                     << QStringLiteral("core/distribute/mirrored.h:2: error: forbidden include \"core/train/events.h\": "
                                                                       "core/distribute -> core/train");
        QTest::newRow("core includes ui") << QStringLiteral("core/train/trainer.cpp") << QByteArray("#include \"ui/panel.h\"\n")
                                          << QStringLiteral("core/train/trainer.cpp:1: error: forbidden include \"ui/panel.h\": core -> ui");
        QTest::newRow("core includes gpu") << QStringLiteral("core/device/device.cpp") << QByteArray("#include \"gpu/plugin.h\"\n")
                                           << QStringLiteral("core/device/device.cpp:1: error: forbidden include \"gpu/plugin.h\": core -> gpu");
        QTest::newRow("core includes app") << QStringLiteral("core/data/source.cpp") << QByteArray("#include \"app/cli_bench.h\"\n")
                                           << QStringLiteral("core/data/source.cpp:1: error: forbidden include \"app/cli_bench.h\": core -> app");
        QTest::newRow("core includes Qt") << QStringLiteral("core/model/model.cpp") << QByteArray("#include <QString>\n")
                                          << QStringLiteral("core/model/model.cpp:1: error: forbidden include \"QString\": core -> Qt");
        QTest::newRow("core includes CUDA") << QStringLiteral("core/backend/tensor.cpp") << QByteArray("#include <cuda_runtime.h>\n")
                                            << QStringLiteral("core/backend/tensor.cpp:1: error: forbidden include \"cuda_runtime.h\": core -> CUDA");
        QTest::newRow("ui includes gpu") << QStringLiteral("ui/devices/devices_panel.cpp") << QByteArray("#include \"gpu/cuda_backend.h\"\n")
                                         << QStringLiteral("ui/devices/devices_panel.cpp:1: error: forbidden include \"gpu/cuda_backend.h\": ui -> gpu");
        QTest::newRow("gpu includes ui") << QStringLiteral("gpu/plugin.cpp") << QByteArray("#include \"ui/common/theme.h\"\n")
                                         << QStringLiteral("gpu/plugin.cpp:1: error: forbidden include \"ui/common/theme.h\": gpu -> ui");
        QTest::newRow("an undeclared module") << QStringLiteral("core/nowhere/store.h") << QByteArray("#pragma once\n")
                                              << QStringLiteral("core/nowhere/store.h: error: core/nowhere/ is not a module of the core's order");
        QTest::newRow("including an undeclared module") << QStringLiteral("core/train/trainer.cpp") << QByteArray("#include \"core/nowhere/store.h\"\n")
                                                        << QStringLiteral("core/train/trainer.cpp:1: error: forbidden include \"core/nowhere/store.h\": "
                                                                          "core/train -> core/nowhere");
    }

    void forbiddenIncludesFail() {
        QFETCH(QString, file);
        QFETCH(QByteArray, text);
        QFETCH(QString, message);
        QTemporaryDir dir;
        write_clean_tree(dir);
        write(dir, file, text);
        const Result result = run_check(dir.path());
        QCOMPARE(result.exit_code, 1);
        QVERIFY2(result.errors.contains(message), qPrintable(result.errors));
        QCOMPARE(result.errors.count(QStringLiteral(" error: ")), 1);  // only the bad include, nothing of the clean tree
    }

    void anAllowanceLetsOneIncludeThroughUntilItIsStale() {
        QTemporaryDir dir;
        write_clean_tree(dir);
        write(dir, QStringLiteral("core/data/source.h"), "#pragma once\n#include \"core/train/trainer.h\"\n");
        const QStringList allow{QStringLiteral("--allow"), QStringLiteral("core/data/source.h=core/train/trainer.h")};
        Result result = run_check(dir.path(), allow);
        QVERIFY2(result.exit_code == 0, qPrintable(result.errors));
        // The allowance is for that file and that header only.
        write(dir, QStringLiteral("core/data/pipeline.h"), "#pragma once\n#include \"core/train/trainer.h\"\n");
        result = run_check(dir.path(), allow);
        QCOMPARE(result.exit_code, 1);
        QVERIFY2(result.errors.contains(QStringLiteral("core/data/pipeline.h:2: error:")), qPrintable(result.errors));
        // Once the move lands, the allowance itself fails the check.
        QVERIFY(QFile::remove(dir.filePath(QStringLiteral("core/data/pipeline.h"))));
        write(dir, QStringLiteral("core/data/source.h"), "#pragma once\n");
        result = run_check(dir.path(), allow);
        QCOMPARE(result.exit_code, 1);
        QVERIFY2(result.errors.contains(QStringLiteral("matches no include any more")), qPrintable(result.errors));
    }

    void aStampIsWrittenOnlyWhenTheCheckPasses() {
        QTemporaryDir dir;
        write_clean_tree(dir);
        const QString stamp = dir.filePath(QStringLiteral("layers.stamp"));
        QCOMPARE(run_check(dir.path(), {QStringLiteral("--stamp"), stamp}).exit_code, 0);
        QVERIFY(QFile::exists(stamp));
        QVERIFY(QFile::remove(stamp));
        write(dir, QStringLiteral("core/util/error.h"), "#include \"core/model/model.h\"\n");
        QCOMPARE(run_check(dir.path(), {QStringLiteral("--stamp"), stamp}).exit_code, 1);
        QVERIFY(!QFile::exists(stamp));
    }
};

QTEST_GUILESS_MAIN(TestLayerCheck)
#include "test_layer_check.moc"

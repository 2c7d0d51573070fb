#pragma once
// Two topics whose words never meet, 30 wires each, as a folder corpus (one subfolder per class):
// Embedding(100, 8) -> GlobalAveragePooling1D -> Dense(2, softmax), input_length 20, learns it to
// > 60 % validation accuracy in 15 epochs at learning rate 0.05.
#include <QtTest/QtTest>

#include <QDir>
#include <QFile>
#include <QString>

inline void write_corpus(const QString& root) {
    const char* classes[][2] = {{"wheat", "wheat harvest grain farmers crop bushels tonnes export"},
                                {"oil", "crude oil barrels opec prices refinery output"}};
    for (const auto& [name, words] : classes) {
        QDir(root).mkpath(name);
        for (int i = 0; i < 30; ++i) {
            QFile file(root + "/" + name + "/" + QString::number(i) + ".txt");
            QVERIFY(file.open(QIODevice::WriteOnly));
            file.write(QByteArray(words) + " " + QByteArray::number(i) + "\n");
        }
    }
}

#include "ui/common/image_file.h"

#include <QCoreApplication>
#include <QDir>
#include <QPixmap>
#include <QSaveFile>

namespace mirrorlab::ui {

bool savePngAtomically(const QPixmap& image, const QString& path, QString* error) {
    auto fail = [&](const QString& why) {
        if (error != nullptr) {
            *error = QCoreApplication::translate("mirrorlab::ui::ImageFile", "Cannot write %1: %2")
                         .arg(QDir::toNativeSeparators(path), why);
        }
        return false;
    };
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly)) return fail(file.errorString());
    if (!image.save(&file, "PNG")) {
        file.cancelWriting();
        return fail(QCoreApplication::translate("mirrorlab::ui::ImageFile", "the picture could not be encoded as PNG"));
    }
    if (!file.commit()) return fail(file.errorString());
    return true;
}

}  // namespace mirrorlab::ui

#include "ui/training/mpi_hosts.h"

#include <QCoreApplication>
#include <QHostAddress>
#include <QHostInfo>
#include <QNetworkInterface>
#include <QRegularExpression>
#include <QStringList>
#include <QSysInfo>

#include <algorithm>

namespace mirrorlab::ui {

namespace {

// A host name or IPv4 address, optionally with its slot count: what mpirun's --host takes. A leading
// '-' can never pass, so nothing here reads as one of mpirun's options.
const QRegularExpression& host_entry() {
    static const QRegularExpression entry(QStringLiteral("^([A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)(:([1-9][0-9]{0,3}))?$"));
    return entry;
}

QString host_of(const QString& entry) { return entry.section(QLatin1Char(':'), 0, 0); }

}  // namespace

QString normalizedHosts(const QString& hosts) {
    QStringList entries;
    for (const QString& entry : hosts.split(QLatin1Char(','))) {
        if (!entry.trimmed().isEmpty()) entries << entry.trimmed();
    }
    return entries.join(QLatin1Char(','));
}

bool isThisHost(const QString& name) {
    const QHostAddress address(name);
    if (!address.isNull()) {
        if (address.isLoopback()) return true;  // 127.0.0.1, and Debian's 127.0.1.1 for the host's own name
        for (const QHostAddress& mine : QNetworkInterface::allAddresses()) {
            if (mine.isEqual(address)) return true;
        }
        return false;
    }
    QStringList names = {QStringLiteral("localhost"), QSysInfo::machineHostName(), QHostInfo::localHostName()};
    if (const QString domain = QHostInfo::localDomainName(); !domain.isEmpty()) names << QHostInfo::localHostName() + QLatin1Char('.') + domain;
    return names.contains(name, Qt::CaseInsensitive);
}

QString hostsProblem(const QString& hosts) {
    if (hosts.isEmpty()) return {};
    const QStringList entries = hosts.split(QLatin1Char(','));
    for (const QString& entry : entries) {
        if (!host_entry().match(entry).hasMatch()) {
            return QCoreApplication::translate("mirrorlab::ui::MpiHosts", "'%1' is not a host: give host names or addresses separated by commas, each with its number "
                             "of workers after a colon where it runs several (localhost:2,node2:2).")
                .arg(entry);
        }
    }
    if (isThisHost(host_of(entries.front()))) return {};
    // The fix to offer: this computer's entry moved to the front, or this computer added there.
    QStringList fixed = entries;
    const auto here = std::find_if(fixed.begin(), fixed.end(), [](const QString& entry) { return isThisHost(host_of(entry)); });
    if (here != fixed.end()) {
        const QString entry = *here;
        fixed.erase(here);
        fixed.prepend(entry);
    } else {
        fixed.prepend(QStringLiteral("localhost"));
    }
    return QCoreApplication::translate("mirrorlab::ui::MpiHosts", "The first host runs rank 0, which reads the job's files and keeps the run on this computer: put "
                     "this computer first (%1).")
        .arg(fixed.join(QLatin1Char(',')));
}

int hostSlots(const QString& hosts) {
    int total = 0;
    for (const QString& entry : hosts.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        const QString count = entry.section(QLatin1Char(':'), 1, 1);
        total += count.isEmpty() ? 1 : count.toInt();
    }
    return total;
}

}  // namespace mirrorlab::ui

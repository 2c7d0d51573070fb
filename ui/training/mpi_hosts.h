#pragma once
// The host list of a job started from the GUI (mpirun's --host: "localhost:2,node2:2"): cleaned up,
// checked before mpirun sees it, and its slots counted. Rank 0 must run on this computer (it reads
// the job's files, writes the events the window follows and keeps the run in this store), and
// mpirun puts rank 0 on the first host, so the list must start with this computer.
#include <QString>

namespace mirrorlab::ui {

// The entries as typed, trimmed, empty ones dropped, joined with commas.
QString normalizedHosts(const QString& hosts);
// What is wrong with a normalized list, in a sentence; empty when nothing is (an empty list: this
// computer only).
QString hostsProblem(const QString& hosts);
// The slots a normalized, valid list offers: each entry's count, 1 where it gives none.
int hostSlots(const QString& hosts);
// Whether `name` (a host name or an address) is this computer.
bool isThisHost(const QString& name);

}  // namespace mirrorlab::ui

#pragma once
// Training > "Train on several workers (MPI)…": how many mpirun workers, and on which hosts (this
// one by default). What each worker needs on another host is said beside the hosts, and a host list
// mpirun could not take, or one that does not start with this host, is named before OK.
#include <QDialog>

class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace mirrorlab::ui {

class WorkersDialog : public QDialog {
    Q_OBJECT
public:
    // `device_spec`: the Devices panel's configuration, which every worker uses; `data_spec`: what
    // each worker loads by itself.
    WorkersDialog(const QString& device_spec, const QString& data_spec, QWidget* parent = nullptr);

    int workers() const;
    void setWorkers(int workers);
    // mpirun's --host list; empty: this host only.
    QString hosts() const;
    void setHosts(const QString& hosts);
    // What is wrong with the hosts (shown under them, OK disabled); empty when nothing is.
    QString problem() const;
    // Where the workers and the hosts' slots do not match: what mpirun will do (Train stays enabled).
    QString slotsNote() const;

private:
    void check();

    QSpinBox* workers_ = nullptr;
    QLineEdit* hosts_ = nullptr;
    QLabel* problem_ = nullptr;
    QLabel* slots_note_ = nullptr;
    QDialogButtonBox* buttons_ = nullptr;
};

}  // namespace mirrorlab::ui

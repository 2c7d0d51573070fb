#include "ui/training/workers_dialog.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "ui/training/mpi_hosts.h"

namespace mirrorlab::ui {

WorkersDialog::WorkersDialog(const QString& device_spec, const QString& data_spec, QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("Train on several workers"));
    workers_ = new QSpinBox(this);
    workers_->setObjectName(QStringLiteral("workersCount"));
    workers_->setAccessibleName(tr("Number of workers"));
    workers_->setRange(1, 64);
    workers_->setValue(2);
    workers_->setToolTip(tr("mpirun -np: how many mirrorlab-cli processes train together"));
    hosts_ = new QLineEdit(this);
    hosts_->setObjectName(QStringLiteral("workersHosts"));
    hosts_->setAccessibleName(tr("Hosts"));
    hosts_->setPlaceholderText(tr("this computer only"));
    hosts_->setToolTip(tr("mpirun --host: host names or addresses separated by commas, each with its number of workers "
                          "after a colon, this computer first (localhost:2,node2:2)"));
    problem_ = new QLabel(this);
    problem_->setObjectName(QStringLiteral("workersHostsProblem"));
    problem_->setWordWrap(true);
    problem_->setStyleSheet(QStringLiteral("QLabel { color: #b00020; }"));
    problem_->setVisible(false);
    slots_note_ = new QLabel(this);
    slots_note_->setObjectName(QStringLiteral("workersSlotsNote"));
    slots_note_->setWordWrap(true);
    slots_note_->setVisible(false);

    auto* about = new QLabel(
        tr("Each worker runs mirrorlab-cli with the Devices panel's configuration (%1), so the job has that many replicas "
           "per worker. Rank 0 runs on this computer: it reads the model and settings and sends them to the others, and "
           "keeps the run here. Another host needs Open MPI, ssh without a password from here, mirrorlab-cli at the same "
           "path as here, and the data at the same place (%2).")
            .arg(device_spec, data_spec),
        this);
    about->setObjectName(QStringLiteral("workersAbout"));
    about->setWordWrap(true);

    buttons_ = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons_->button(QDialogButtonBox::Ok)->setText(tr("Train"));
    connect(buttons_, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(hosts_, &QLineEdit::textChanged, this, &WorkersDialog::check);
    connect(workers_, &QSpinBox::valueChanged, this, &WorkersDialog::check);

    auto* form = new QFormLayout;
    form->addRow(tr("Workers:"), workers_);
    form->addRow(tr("Hosts:"), hosts_);
    form->addRow(QString(), problem_);
    form->addRow(QString(), slots_note_);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(about);
    layout->addWidget(buttons_);
    setMinimumWidth(520);
}

int WorkersDialog::workers() const { return workers_->value(); }

void WorkersDialog::setWorkers(int workers) {
    workers_->setValue(workers);
    check();
}

QString WorkersDialog::hosts() const { return normalizedHosts(hosts_->text()); }

void WorkersDialog::setHosts(const QString& hosts) {
    hosts_->setText(hosts);
    check();
}

QString WorkersDialog::problem() const { return problem_->text(); }

void WorkersDialog::check() {
    const QString hosts = this->hosts();
    const QString problem = hostsProblem(hosts);
    problem_->setText(problem);
    problem_->setVisible(!problem.isEmpty());
    buttons_->button(QDialogButtonBox::Ok)->setEnabled(problem.isEmpty());
    // mpirun fills the hosts' slots in the order given (and, with more workers, oversubscribes).
    QString note;
    if (problem.isEmpty() && !hosts.isEmpty()) {
        const int offered = hostSlots(hosts), workers = workers_->value();
        if (workers < offered) {
            note = tr("The hosts offer %1 slots for %2 workers: mpirun fills them in the order given, so the last hosts "
                      "may get none. Set Workers to %1 to use every host.")
                       .arg(offered)
                       .arg(workers);
        } else if (workers > offered) {
            note = tr("The hosts offer %1 slots for %2 workers: mpirun puts the others on hosts that are full already, "
                      "where they share the cores.")
                       .arg(offered)
                       .arg(workers);
        }
    }
    slots_note_->setText(note);
    slots_note_->setVisible(!note.isEmpty());
}

QString WorkersDialog::slotsNote() const { return slots_note_->text(); }

}  // namespace mirrorlab::ui

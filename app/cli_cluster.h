#pragma once
// mirrorlab-cli as one worker of several, started together by `mpirun -np K mirrorlab-cli train ...`
// (or `bench`): joining the workers, checking that they were started alike, rank 0 alone speaking
// and keeping the run, and ending together — a worker that fails alone ends the whole job instead
// of leaving the others waiting for it.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/distribute/worker_communicator.h"
#include "core/store/checkpoint.h"

namespace mirrorlab::cli {

class ClusterSession {
public:
    // Joins the other workers when mpirun started this process with others (MPI_Init), and shares
    // the cores between the workers on this host; a session of one worker otherwise. Throws
    // UsageError when started by mpirun but built without MPI (saying what to install).
    static ClusterSession join_if_launched();
    ClusterSession();
    ClusterSession(ClusterSession&&) noexcept;
    ~ClusterSession();

    bool active() const { return communicator_ != nullptr; }  // more than one worker
    int rank() const { return communicator_ ? communicator_->rank() : 0; }
    int size() const { return communicator_ ? communicator_->size() : 1; }
    bool leader() const { return rank() == 0; }  // rank 0 prints, records the run, checkpoints
    WorkerCommunicator* communicator() { return communicator_.get(); }

    // Rank 0 runs `make` and every worker gets its bytes; when it throws, every worker throws the
    // same kind (UsageError or Error) with its text, so that all fail alike and none waits.
    std::string from_leader(const std::function<std::string()>& make);
    // Throws UsageError when the workers' `value`s differ: "<what> differs between the workers:
    // rank 1 has <text of rank 1> where rank 0 has <...>; <fix>". `text` describes this worker's.
    void check_same(std::uint64_t value, const std::string& text, const std::string& what, const std::string& fix);

    // What went wrong on this worker: rank 0 says it at once; the others keep it for
    // run_to_end(), which says it only when it matters (rank 0 did not fail, or they fail alone).
    void report_failure(const std::string& text);

    // Runs a command as this worker and ends as the job: returns its exit status when every
    // worker got here, or ends every worker's process when this one failed and the others did not
    // come within kAloneTimeout (they wait for it in a collective: it failed alone).
    int run_to_end(const std::function<int()>& command);
    static constexpr std::chrono::seconds kAloneTimeout{15};

private:
    std::unique_ptr<WorkerCommunicator> communicator_;
    std::string failure_;
};

// Under mpirun the workers must train alike: the same number of replicas each (`replicas`, from
// --devices `device_spec`), data, model and settings. Throws UsageError naming the ranks that differ.
void check_workers_train_alike(ClusterSession& cluster, int replicas, const std::string& device_spec, const DataFingerprint& data,
                               const Model& model, const TrainConfig& config);

// Fault injection for tests only: MIRRORLAB_FAULT_INJECTION_PERTURB_RANK=R makes worker R change
// one of its weights after start-up, so that the workers' consistency check must stop the run.
bool fault_injection_perturbs_weights(int rank);

}  // namespace mirrorlab::cli

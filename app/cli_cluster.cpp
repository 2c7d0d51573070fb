#include "app/cli_cluster.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "app/cli_args.h"
#include "core/model/model.h"
#include "core/train/train_config_json.h"
#include "core/util/json.h"
#include "core/util/error.h"
#include "core/util/thread_pool.h"
#ifdef MIRRORLAB_HAVE_MPI
#include "core/mpi/mpi_communicator.h"
#endif

namespace mirrorlab::cli {

namespace {

int environment_number(const char* name) {
    const char* text = std::getenv(name);
    return text != nullptr ? std::atoi(text) : 0;
}

// Processes mpirun started, read before MPI is touched (core/mpi reads the same variables).
int launched_processes() {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
        if (const int size = environment_number(name); size > 0) return size;
    }
    return 0;
}

#ifdef MIRRORLAB_HAVE_MPI
// K workers on one host would each start one thread per core: K times too many. Each takes its
// share of the cores instead (MIRRORLAB_CPU_THREADS, when set, still decides).
void share_cores_between_local_workers() {
    if (std::getenv("MIRRORLAB_CPU_THREADS") != nullptr) return;
    const int local_workers = std::max(1, environment_number("OMPI_COMM_WORLD_LOCAL_SIZE"));
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    ThreadPool::instance().set_limit(std::max(1, cores / local_workers));
}
#endif

}  // namespace

ClusterSession::ClusterSession() = default;
ClusterSession::ClusterSession(ClusterSession&&) noexcept = default;
ClusterSession::~ClusterSession() = default;

ClusterSession ClusterSession::join_if_launched() {
    ClusterSession session;
    const int processes = launched_processes();
    if (processes <= 1) return session;
#ifdef MIRRORLAB_HAVE_MPI
    session.communicator_ = std::make_unique<MpiCommunicator>();
    share_cores_between_local_workers();
#else
    throw UsageError("mpirun started " + std::to_string(processes) +
                     " workers, but this mirrorlab-cli was built without MPI; install libopenmpi-dev and openmpi-bin "
                     "and rebuild (bash packaging/mirrorlab.sh build does both), or run it without mpirun");
#endif
    return session;
}

std::string ClusterSession::from_leader(const std::function<std::string()>& make) {
    if (!active()) return make();
    // What rank 0 sends: the bytes, or its error's text and kind, so that every worker fails alike.
    enum : std::uint64_t { kMade = 0, kUsageError = 1, kError = 2 };
    std::string bytes;
    std::uint64_t outcome = kMade;
    if (leader()) {
        try {
            bytes = make();
        } catch (const UsageError& error) {
            bytes = error.what();
            outcome = kUsageError;
        } catch (const std::exception& error) {
            bytes = error.what();
            outcome = kError;
        }
    }
    std::uint64_t header[2] = {outcome, bytes.size()};
    communicator_->broadcast(header, sizeof header, 0);
    bytes.resize(header[1]);
    communicator_->broadcast(bytes.data(), static_cast<std::int64_t>(bytes.size()), 0);
    if (header[0] == kUsageError) throw UsageError(bytes);
    if (header[0] == kError) throw Error(bytes);
    return bytes;
}

void ClusterSession::check_same(std::uint64_t value, const std::string& text, const std::string& what, const std::string& fix) {
    if (!active()) return;
    std::vector<std::uint64_t> values(static_cast<std::size_t>(size()), 0);
    values[static_cast<std::size_t>(rank())] = value;
    communicator_->all_gather_in_place(values.data(), sizeof(std::uint64_t));
    if (std::all_of(values.begin(), values.end(), [&](std::uint64_t v) { return v == values.front(); })) return;
    // They differ: every worker's own description, in fixed-size slots.
    constexpr std::size_t kSlot = 200;
    std::vector<char> texts(kSlot * static_cast<std::size_t>(size()), '\0');
    std::memcpy(texts.data() + kSlot * static_cast<std::size_t>(rank()), text.data(), std::min(text.size(), kSlot - 1));
    communicator_->all_gather_in_place(texts.data(), kSlot);
    auto text_of = [&](std::size_t r) { return std::string(texts.data() + kSlot * r); };
    std::string apart;
    for (std::size_t r = 1; r < values.size(); ++r) {
        if (values[r] != values[0]) apart += (apart.empty() ? "rank " : ", rank ") + std::to_string(r) + " has " + text_of(r);
    }
    throw UsageError(what + " differs between the workers: " + apart + " where rank 0 has " + text_of(0) + "; " + fix);
}

void ClusterSession::report_failure(const std::string& text) {
    if (leader()) {
        std::fprintf(stderr, "mirrorlab-cli: error: %s\n", text.c_str());
        std::fflush(stderr);
    }
    failure_ = text;
}

int ClusterSession::run_to_end(const std::function<int()>& command) {
    int exit_code = 1;
    try {
        exit_code = command();
    } catch (const UsageError& error) {
        exit_code = 2;
        report_failure(error.what());
    } catch (const std::exception& error) {
        exit_code = 1;
        report_failure(error.what());
    }
    if (!active()) return exit_code;
    // A worker that failed alone would leave the others waiting for it in a collective: it waits
    // a while for them here, then ends them all. One that finished waits as long as it takes.
    const bool failed = exit_code != 0 && !failure_.empty();
    const auto wait = failed ? std::chrono::milliseconds(kAloneTimeout) : std::chrono::milliseconds(std::chrono::minutes(30));
    if (!communicator_->all_arrive_within(wait)) {
        std::fprintf(stderr, "mirrorlab-cli: error: worker %d of %d%s%s; the other workers did not stop with it within %lld s, "
                     "so the whole job ends now\n",
                     rank(), size(), failure_.empty() ? "" : ": ", failure_.empty() ? "finished" : failure_.c_str(),
                     static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(wait).count()));
        std::fflush(stderr);
        communicator_->abort_all(exit_code != 0 ? exit_code : 1);
    }
    // Everyone is here: a worker whose failure rank 0 did not share says it, naming itself.
    std::vector<std::uint64_t> codes(static_cast<std::size_t>(size()), 0);
    codes[static_cast<std::size_t>(rank())] = static_cast<std::uint64_t>(exit_code);
    communicator_->all_gather_in_place(codes.data(), sizeof(std::uint64_t));
    if (!leader() && !failure_.empty() && codes.front() == 0) {
        std::fprintf(stderr, "mirrorlab-cli: error: worker %d: %s\n", rank(), failure_.c_str());
        std::fflush(stderr);
    }
    return exit_code;
}

void check_workers_train_alike(ClusterSession& cluster, int replicas, const std::string& device_spec, const DataFingerprint& data,
                               const Model& model, const TrainConfig& config) {
    cluster.check_same(static_cast<std::uint64_t>(replicas), std::to_string(replicas) + " replicas (--devices " + device_spec + ")",
                       "the number of replicas", "give every worker the same --devices (replicas per worker)");
    cluster.check_same(std::hash<std::string>{}(data.digest + data.name), "data " + data.name + " (digest " + data.digest + ")",
                       "the training data", "give every worker the same --data and the same files");
    const std::string settings = model.to_json_text() + json::dump(train_config_to_json(config));
    cluster.check_same(std::hash<std::string>{}(settings),
                       "a model of " + std::to_string(model.total_params()) + " parameters, batch " + std::to_string(config.batch_size) +
                           ", seed " + std::to_string(config.seed) + ", " + std::to_string(config.epochs) + " epochs",
                       "the model or a training setting", "start every worker with the same command line");
}

bool fault_injection_perturbs_weights(int rank) {
    const char* text = std::getenv("MIRRORLAB_FAULT_INJECTION_PERTURB_RANK");
    return text != nullptr && *text != '\0' && std::atoi(text) == rank;
}

}  // namespace mirrorlab::cli

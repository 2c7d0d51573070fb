// MirroredStrategy's checks across workers (MultiWorkerMirroredStrategy): agreeing on a stop and
// comparing the workers' variables. The step itself is in mirrored.cpp.
#include <map>

#include "core/distribute/mirrored.h"

namespace mirrorlab {

bool MirroredStrategy::any_worker(bool mine) { return cross_worker_ ? cross_worker_->any(mine) : mine; }

std::uint64_t MirroredStrategy::any_worker_bits(std::uint64_t mine) { return cross_worker_ ? cross_worker_->any_bits(mine) : mine; }

void MirroredStrategy::check_workers_agree(std::int64_t after_step) {
    if (!cross_worker_) return;
    // One checksum per worker: its replicas' checksums folded together, so that a replica that
    // drifted from its own worker's others shows too.
    std::uint64_t mine = 0;
    for (int r = 0; r < replica_count(); ++r) {
        const std::uint64_t replica_sum = fnv1a_checksum(devices_[static_cast<std::size_t>(r)]->backend(),
                                                         replicas_[static_cast<std::size_t>(r)]->weight_buffer());
        mine = mine * 1099511628211ull ^ replica_sum;
    }
    const std::vector<std::uint64_t> all = cross_worker_->gather(mine);
    std::map<std::uint64_t, std::vector<int>> ranks_with;
    for (std::size_t rank = 0; rank < all.size(); ++rank) ranks_with[all[rank]].push_back(static_cast<int>(rank));
    if (ranks_with.size() == 1) return;
    std::string apart;
    for (std::size_t rank = 1; rank < all.size(); ++rank) {
        if (all[rank] != all[0]) apart += (apart.empty() ? "" : ", ") + std::to_string(rank);
    }
    char reference[32];
    std::snprintf(reference, sizeof reference, "%016llx", static_cast<unsigned long long>(all[0]));
    throw ClusterError("the workers' variables differ after step " + std::to_string(after_step) + ": rank" +
                       (apart.find(',') != std::string::npos ? "s " : " ") + apart + (apart.find(',') != std::string::npos ? " differ" : " differs") +
                       " from rank 0 (checksum " + reference +
                       "). Mirrored variables must stay identical on every worker; the run stops instead of "
                       "training on with copies that drifted apart. Resume from the last checkpoint (--resume), and check that every "
                       "worker runs the same mirrorlab-cli build on the same kind of CPU");
}

void MirroredStrategy::perturb_weights_for_test() {
    std::vector<float> perturbed = weights();
    if (perturbed.empty()) return;
    perturbed.front() += 1.0e-3f;
    set_weights(perturbed);
}

}  // namespace mirrorlab

#include "core/device/collectives.h"

namespace mirrorlab {

AllReduceAlgorithm all_reduce_from_name(std::string_view name) {
    if (name == "auto") return AllReduceAlgorithm::Auto;
    if (name == "reduce" || name == "reduce_to_one_device") return AllReduceAlgorithm::ReduceToOneDevice;
    if (name == "ring") return AllReduceAlgorithm::Ring;
    if (name == "nccl") return AllReduceAlgorithm::Nccl;
    return AllReduceAlgorithm::Invalid;
}

std::string_view all_reduce_name(AllReduceAlgorithm algorithm) {
    switch (algorithm) {
        case AllReduceAlgorithm::Auto: return "auto";
        case AllReduceAlgorithm::ReduceToOneDevice: return "reduce_to_one_device";
        case AllReduceAlgorithm::Ring: return "ring";
        case AllReduceAlgorithm::Nccl: return "nccl";
        case AllReduceAlgorithm::Invalid: break;
    }
    return "invalid";
}

}  // namespace mirrorlab

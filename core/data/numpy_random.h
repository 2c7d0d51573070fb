#pragma once
// numpy's legacy random generator, bit for bit: np.random.RandomState(seed) (MT19937 seeded with
// init_genrand) and its shuffle(). Keras shuffles reuters.npz with RandomState(113) before the
// train/test split, so reproducing Keras' split needs exactly this generator.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace mirrorlab {

class NumpyRandomState {
  public:
    // np.random.RandomState(seed) for an int seed (numpy accepts 0 to 2**32 - 1).
    explicit NumpyRandomState(uint32_t seed);

    // MT19937's next tempered output (numpy's random_uint32 / legacy randint bits).
    uint32_t next_uint32();
    // Two outputs, the first in the high half (numpy's next_uint64 for MT19937).
    uint64_t next_uint64();
    // Uniform in [0, max], as numpy's random_interval: the smallest all-ones mask >= max, with
    // rejection of 32-bit draws (64-bit ones when max does not fit in 32 bits).
    uint64_t random_interval(uint64_t max);

    // RandomState.shuffle on a 1-D array: Fisher-Yates from the end.
    template <class T>
    void shuffle(std::span<T> values) {
        for (size_t i = values.size(); i-- > 1;) {
            const auto j = static_cast<size_t>(random_interval(i));
            std::swap(values[i], values[j]);
        }
    }

    // indices = np.arange(n); rng.shuffle(indices)
    std::vector<int64_t> shuffled_indices(size_t n);

  private:
    void generate();

    std::array<uint32_t, 624> key_{};
    size_t pos_ = 624;
};

}  // namespace mirrorlab

#include "core/data/synthetic.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "core/util/cancellation.h"
#include "core/util/error.h"

namespace mirrorlab {

namespace {

// Class sizes of Keras' reuters.npz, train + test (8,982 + 2,246 = 11,228 wires).
constexpr std::array<int32_t, 46> kReutersClassSizes = {
    67,  537, 94, 3972, 2423, 22,  62, 19, 177, 126, 154, 473, 62, 209, 28, 29,
    543, 51,  86, 682,  339,  127, 22, 53, 81,  123, 32,  19,  58, 23,  57, 52,
    42,  16,  57, 16,   60,   21,  22, 29, 46,  38,  16,  27,  17, 19};

// The topic names commonly given to Keras' label ids (the npz file itself has none).
constexpr std::array<const char*, 46> kReutersClassNames = {
    "cocoa",     "grain",        "veg-oil", "earn",       "acq",      "wheat",    "copper",
    "housing",   "money-supply", "coffee",  "sugar",      "trade",    "reserves", "ship",
    "cotton",    "carcass",      "crude",   "nat-gas",    "cpi",      "money-fx", "interest",
    "gnp",       "meal-feed",    "alum",    "oilseed",    "gold",     "tin",      "strategic-metal",
    "livestock", "retail",       "ipi",     "iron-steel", "rubber",   "heat",     "jobs",
    "lei",       "bop",          "zinc",    "orange",     "pet-chem", "dlr",      "gas",
    "silver",    "wpi",          "hog",     "lead"};

// Families of related Reuters topics; they share keywords, which is where real classifiers
// confuse topics (wheat vs grain, money-fx vs interest). 0 agriculture, 1 corporate,
// 2 money markets, 3 economic indicators, 4 energy, 5 metals, 6 shipping.
constexpr int32_t kFamilies = 7;
constexpr std::array<int32_t, 46> kReutersFamily = {0, 0, 0, 1, 1, 0, 5, 3, 2, 0, 0, 3, 2, 6, 0, 0,
                                                    4, 4, 3, 2, 2, 3, 0, 5, 0, 5, 5, 5, 0, 3, 3, 5,
                                                    0, 4, 3, 3, 2, 5, 0, 4, 2, 4, 5, 3, 0, 5};

// Generative model parameters (documented in synthetic.h).
constexpr int32_t kFirstWordId = 4;  // Keras index_from = 3: words start at id 4
constexpr double kZipfExponent = 1.0;
constexpr double kZipfOffset = 3.0;
constexpr int32_t kFamilyKeywords = 40;
constexpr int32_t kTopicKeywords = 30;
constexpr int32_t kSharedTopicKeywords = 6;
constexpr int32_t kKeywordRankLow = 60;
constexpr int32_t kKeywordRankHigh = 15000;
constexpr double kKeywordExponent = 0.7;
constexpr double kMedianLength = 95.0;
constexpr double kLengthSigma = 0.92;
constexpr int32_t kMinLength = 10;
constexpr int32_t kMaxLength = 2400;
constexpr double kTopicStrengthLow = 0.015;
constexpr double kTopicStrengthHigh = 0.14;
constexpr double kOwnShare = 0.75;
constexpr double kFamilyShare = 0.20;  // the rest goes to the mentioned topic
constexpr double kPhraseProbability = 0.5;
// Topic focus: strength multiplier 0.6 + 0.8 * sqrt(size / largest size).
constexpr double kFocusBase = 0.6;
constexpr double kFocusGain = 0.8;

// Walker/Vose alias table: O(1) per draw, which keeps 1.6 M tokens well under the time budget.
// Built and sampled with plain double arithmetic, so it is deterministic across platforms
// (std::discrete_distribution is not).
class Discrete {
  public:
    explicit Discrete(const std::vector<double>& weights)
        : probability_(weights.size(), 1.0), alias_(weights.size()) {
        const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
        const auto n = static_cast<double>(weights.size());
        std::vector<double> scaled(weights.size());
        std::vector<uint32_t> small, large;
        for (size_t i = 0; i < weights.size(); ++i) {
            alias_[i] = static_cast<uint32_t>(i);
            scaled[i] = weights[i] * n / sum;
            (scaled[i] < 1.0 ? small : large).push_back(static_cast<uint32_t>(i));
        }
        while (!small.empty() && !large.empty()) {
            const uint32_t s = small.back(), l = large.back();
            small.pop_back();
            probability_[s] = scaled[s];
            alias_[s] = l;
            scaled[l] -= 1.0 - scaled[s];
            if (scaled[l] < 1.0) {
                large.pop_back();
                small.push_back(l);
            }
        }
        // Whatever is left is 1 up to rounding: keep probability 1 (its own slot).
    }
    size_t sample(DataRandom& rng) const {
        const size_t slot = rng.below(probability_.size());
        return rng.uniform() < probability_[slot] ? slot : alias_[slot];
    }

  private:
    std::vector<double> probability_;
    std::vector<uint32_t> alias_;
};

// Keyword list of one topic or family: word ranks and their sampling law.
struct Keywords {
    std::vector<int32_t> ranks;
    Discrete law{{1.0}};
};

Keywords make_keywords(std::vector<int32_t> ranks) {
    std::vector<double> weights(ranks.size());
    for (size_t j = 0; j < ranks.size(); ++j) {
        weights[j] = 1.0 / std::pow(static_cast<double>(j + 1), kKeywordExponent);
    }
    return Keywords{std::move(ranks), Discrete(weights)};
}

// Distinct ranks drawn uniformly from [low, high).
std::vector<int32_t> draw_ranks(DataRandom& rng, int32_t count, int32_t low, int32_t high) {
    std::vector<int32_t> ranks;
    ranks.reserve(static_cast<size_t>(count));
    while (static_cast<int32_t>(ranks.size()) < count) {
        const auto r = static_cast<int32_t>(
            low + static_cast<int32_t>(rng.below(static_cast<uint64_t>(high - low))));
        if (std::find(ranks.begin(), ranks.end(), r) == ranks.end()) ranks.push_back(r);
    }
    return ranks;
}

// Exact class counts for `total` samples in Reuters' proportions (largest remainder).
std::vector<int32_t> class_sizes(int32_t num_classes, int64_t total) {
    std::vector<double> weights(static_cast<size_t>(num_classes));
    double sum = 0.0;
    for (int32_t c = 0; c < num_classes; ++c) {
        sum += weights[static_cast<size_t>(c)] = kReutersClassSizes[static_cast<size_t>(c) % 46];
    }
    std::vector<int32_t> sizes(weights.size());
    std::vector<std::pair<double, int32_t>> remainders;
    int64_t assigned = 0;
    for (size_t c = 0; c < weights.size(); ++c) {
        const double exact = static_cast<double>(total) * weights[c] / sum;
        sizes[c] = static_cast<int32_t>(std::floor(exact));
        assigned += sizes[c];
        remainders.emplace_back(exact - sizes[c], static_cast<int32_t>(c));
    }
    // Larger remainders first; ties to the lower class id, so the result is well defined.
    std::sort(remainders.begin(), remainders.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (size_t k = 0; assigned < total; ++k, ++assigned)
        ++sizes[static_cast<size_t>(remainders[k].second)];
    return sizes;
}

void check(bool ok, const std::string& problem) {
    if (!ok) throw DataError("[synthetic reuters] " + problem);
}

// The topic model: keyword lists per family of topics and per topic, where the last few keywords of
// each topic are copies of another topic's leading ones (overlap between topics).
struct TopicModel {
    std::vector<Keywords> family_words;
    std::vector<Keywords> topic_words;
};

TopicModel make_topic_model(DataRandom& rng, int32_t num_classes, int32_t families, int32_t keyword_high) {
    TopicModel model;
    for (int32_t f = 0; f < families; ++f) {
        model.family_words.push_back(
            make_keywords(draw_ranks(rng, kFamilyKeywords, kKeywordRankLow, keyword_high)));
    }
    std::vector<std::vector<int32_t>> topic_ranks;
    for (int32_t c = 0; c < num_classes; ++c) {
        topic_ranks.push_back(draw_ranks(rng, kTopicKeywords, kKeywordRankLow, keyword_high));
    }
    // Copied from the lists as drawn, so the order of topics does not matter.
    const auto drawn = topic_ranks;
    for (int32_t c = 0; c < num_classes; ++c) {
        auto other = static_cast<int32_t>(rng.below(static_cast<uint64_t>(num_classes - 1)));
        if (other >= c) ++other;
        auto& mine = topic_ranks[static_cast<size_t>(c)];
        for (int32_t k = 0; k < kSharedTopicKeywords; ++k) {
            mine[static_cast<size_t>(kTopicKeywords - 1 - k)] =
                drawn[static_cast<size_t>(other)][static_cast<size_t>(k)];
        }
    }
    for (auto& ranks : topic_ranks) model.topic_words.push_back(make_keywords(std::move(ranks)));
    return model;
}

// Labels: exact Reuters-shaped counts, shuffled (Fisher-Yates).
std::vector<int32_t> shuffled_labels(DataRandom& rng, const std::vector<int32_t>& sizes, int64_t total) {
    std::vector<int32_t> labels;
    labels.reserve(static_cast<size_t>(total));
    for (size_t c = 0; c < sizes.size(); ++c) labels.insert(labels.end(), static_cast<size_t>(sizes[c]), static_cast<int32_t>(c));
    for (size_t i = labels.size(); i > 1; --i) std::swap(labels[i - 1], labels[rng.below(i)]);
    return labels;
}

// One wire of `length` tokens: the start token, then each word a keyword (of the wire's own topic,
// its family, or another topic it mentions) with probability `strength`, else a common word.
void draw_wire(DataRandom& rng, std::vector<int32_t>& seq, int32_t length, double strength, const Keywords& own,
               const Keywords& family, const Keywords& other, const Discrete& common) {
    seq.resize(static_cast<size_t>(length));
    seq[0] = 1;  // Keras start_char
    for (int32_t t = 1; t < length; ++t) {
        if (rng.uniform() < strength) {
            const double u = rng.uniform();
            const Keywords& k = u < kOwnShare ? own : (u < kOwnShare + kFamilyShare ? family : other);
            const size_t j = k.law.sample(rng);
            seq[static_cast<size_t>(t)] = kFirstWordId + k.ranks[j];
            // Collocations ("crude oil", "net profit"): a keyword is often followed by its
            // companion, the next word of the same list. Local structure that a
            // convolution can pick up and a bag of words cannot.
            if (t + 1 < length && rng.uniform() < kPhraseProbability) {
                seq[static_cast<size_t>(++t)] = kFirstWordId + k.ranks[(j + 1) % k.ranks.size()];
            }
        } else {
            seq[static_cast<size_t>(t)] = kFirstWordId + static_cast<int32_t>(common.sample(rng));
        }
    }
}

// The two splits, named and with their class names, from the wires in order (training first).
DatasetSplit assemble_split(std::vector<std::vector<int32_t>>& sequences, const std::vector<int32_t>& labels,
                            size_t train_count, int32_t num_classes, int32_t vocabulary) {
    DatasetSplit split;
    for (TextDataset* part : {&split.train, &split.validation}) {
        part->name = "Synthetic newswire (Reuters-shaped)";
        part->synthetic = true;
        part->num_classes = num_classes;
        part->vocabulary_size = vocabulary;
        for (int32_t c = 0; c < num_classes; ++c) {
            part->class_names.push_back(num_classes == 46 ? std::string(kReutersClassNames[static_cast<size_t>(c)])
                                                          : "topic-" + std::to_string(c));
        }
    }
    const auto train_end = static_cast<std::ptrdiff_t>(train_count);
    split.train.sequences.assign(std::make_move_iterator(sequences.begin()),
                                 std::make_move_iterator(sequences.begin() + train_end));
    split.validation.sequences.assign(std::make_move_iterator(sequences.begin() + train_end),
                                      std::make_move_iterator(sequences.end()));
    split.train.labels.assign(labels.begin(), labels.begin() + train_end);
    split.validation.labels.assign(labels.begin() + train_end, labels.end());
    return split;
}

}  // namespace

DatasetSplit make_synthetic_reuters(const SyntheticReutersOptions& options) {
    check(options.num_classes >= 2,
          "num_classes is " + std::to_string(options.num_classes) + ", needs at least 2");
    check(options.train_samples >= 1,
          "train_samples is " + std::to_string(options.train_samples) + ", needs at least 1");
    check(options.validation_samples >= 0, "validation_samples is " +
                                               std::to_string(options.validation_samples) +
                                               ", must not be negative");
    check(options.vocabulary_size >= 1000, "vocabulary_size is " +
                                               std::to_string(options.vocabulary_size) +
                                               ", needs at least 1,000 words for the topic model");

    const int32_t num_classes = options.num_classes;
    const int32_t vocabulary = options.vocabulary_size;
    const int32_t words = vocabulary - kFirstWordId;
    const int32_t keyword_high = std::min(kKeywordRankHigh, words);
    const int64_t total = int64_t{options.train_samples} + options.validation_samples;
    DataRandom rng(options.seed);

    // Common words: one Zipf-Mandelbrot law over all ranks.
    std::vector<double> zipf(static_cast<size_t>(words));
    for (int32_t r = 0; r < words; ++r)
        zipf[static_cast<size_t>(r)] = 1.0 / std::pow(r + kZipfOffset, kZipfExponent);
    const Discrete common(zipf);

    // Topic and family keyword lists.
    const bool reuters_shape = num_classes == 46;
    const int32_t families = reuters_shape ? kFamilies : std::min(kFamilies, num_classes);
    auto family_of = [&](int32_t c) {
        return reuters_shape ? kReutersFamily[static_cast<size_t>(c)] : c % families;
    };
    const TopicModel topics = make_topic_model(rng, num_classes, families, keyword_high);

    const std::vector<int32_t> sizes = class_sizes(num_classes, total);
    const std::vector<int32_t> labels = shuffled_labels(rng, sizes, total);
    std::vector<double> prior(sizes.begin(), sizes.end());
    const Discrete class_prior(prior);

    // Big Reuters topics are routine, templated wires (earnings reports, takeovers) and easy to
    // spot; small ones are occasional stories. Scaling the keyword rate with the topic's size
    // reproduces that per-class difficulty, which the overall accuracy of a model depends on.
    const int32_t largest = *std::max_element(sizes.begin(), sizes.end());
    std::vector<double> focus(sizes.size());
    for (size_t c = 0; c < sizes.size(); ++c) {
        focus[c] = kFocusBase +
                   kFocusGain * std::sqrt(static_cast<double>(sizes[c]) / std::max(largest, 1));
    }

    const double mu = std::log(kMedianLength);
    std::vector<std::vector<int32_t>> sequences(static_cast<size_t>(total));
    for (int64_t i = 0; i < total; ++i) {
        if (i % 1024 == 0) throw_if_cancelled();
        const int32_t label = labels[static_cast<size_t>(i)];
        const double raw_length = std::exp(mu + kLengthSigma * rng.normal());
        const auto length = static_cast<int32_t>(
            std::clamp(std::lround(raw_length), long{kMinLength}, long{kMaxLength}));
        const double strength =
            focus[static_cast<size_t>(label)] *
            (kTopicStrengthLow + (kTopicStrengthHigh - kTopicStrengthLow) * rng.uniform());
        const auto mentioned = static_cast<int32_t>(class_prior.sample(rng));
        draw_wire(rng, sequences[static_cast<size_t>(i)], length, strength, topics.topic_words[static_cast<size_t>(label)],
                  topics.family_words[static_cast<size_t>(family_of(label))],
                  topics.topic_words[static_cast<size_t>(mentioned)], common);
    }

    // Keras builds its word index from the corpus, so the largest id always occurs in the data
    // and models size their embedding as max id + 1. Make sure the training split has it.
    const auto train_count = static_cast<size_t>(options.train_samples);
    int32_t max_id = 0;
    for (size_t i = 0; i < train_count; ++i) {
        for (int32_t id : sequences[i]) max_id = std::max(max_id, id);
    }
    if (max_id < vocabulary - 1) {
        auto& seq = sequences[rng.below(train_count)];
        seq[1 + rng.below(seq.size() - 1)] = vocabulary - 1;
    }
    return assemble_split(sequences, labels, train_count, num_classes, vocabulary);
}

}  // namespace mirrorlab

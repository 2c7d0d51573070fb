#include "core/data/statistics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numeric>

#include "core/util/error.h"

namespace mirrorlab {

namespace {

// 1234567 -> "1,234,567" (the grouping Keras' model.summary() uses).
std::string grouped(int64_t value) {
    const bool negative = value < 0;
    std::string digits = std::to_string(negative ? -value : value);
    for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3)
        digits.insert(static_cast<size_t>(i), ",");
    return negative ? "-" + digits : digits;
}

std::string fixed(double value, int decimals) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    return buffer;
}

// Display width of UTF-8 text: one column per code point (continuation bytes do not count).
size_t display_width(const std::string& s) {
    return static_cast<size_t>(std::count_if(
        s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string pad_right(const std::string& s, size_t width) {
    const size_t w = display_width(s);
    return w >= width ? s : s + std::string(width - w, ' ');
}

std::string pad_left(const std::string& s, size_t width) {
    const size_t w = display_width(s);
    return w >= width ? s : std::string(width - w, ' ') + s;
}

// The ten largest classes with their counts and shares, then how many more there are.
std::string class_table(const DatasetStatistics& stats, const std::function<std::string(int64_t)>& percent) {
    std::string table;
    std::vector<size_t> order(stats.class_counts.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return stats.class_counts[a] > stats.class_counts[b];
    });
    constexpr size_t kShown = 10;
    const size_t shown = std::min(order.size(), kShown);
    size_t name_width = 0;
    size_t count_width = 0;
    for (size_t k = 0; k < shown; ++k) {
        name_width = std::max(
            name_width,
            display_width(stats.class_names.size() > order[k] ? stats.class_names[order[k]] : ""));
        count_width = std::max(count_width, grouped(stats.class_counts[order[k]]).size());
    }
    for (size_t k = 0; k < shown; ++k) {
        const size_t c = order[k];
        const std::string name =
            c < stats.class_names.size() ? stats.class_names[c] : std::to_string(c);
        table += "  " + pad_right(name, name_width) + "  " +
               pad_left(grouped(stats.class_counts[c]), count_width) + "  " +
               pad_left(percent(stats.class_counts[c]), 7) + "\n";
    }
    if (order.size() > shown) {
        int64_t rest = 0;
        for (size_t k = shown; k < order.size(); ++k) rest += stats.class_counts[order[k]];
        table += "  … " + grouped(static_cast<int64_t>(order.size() - shown)) +
               " more classes with " + grouped(rest) + " samples\n";
    }
    return table;
}

// One '#' bar per bin of sample lengths, scaled to the fullest bin.
std::string length_histogram(const DatasetStatistics& stats) {
    std::string out;
    if (stats.length_histogram.empty()) return out;
    const int64_t peak =
        *std::max_element(stats.length_histogram.begin(), stats.length_histogram.end());
    const int64_t width = stats.histogram_bin_width;
    out += "Lengths (bins of " + grouped(width) + (width == 1 ? " token" : " tokens") + "):\n";
    std::vector<std::string> ranges;
    size_t range_width = 0;
    for (size_t b = 0; b < stats.length_histogram.size(); ++b) {
        const int64_t low = static_cast<int64_t>(b) * width;
        ranges.push_back(width == 1 ? grouped(low)
                                    : grouped(low) + "–" + grouped(low + width - 1));
        range_width = std::max(range_width, display_width(ranges.back()));
    }
    constexpr int64_t kBar = 30;
    for (size_t b = 0; b < stats.length_histogram.size(); ++b) {
        const int64_t count = stats.length_histogram[b];
        int64_t bar = peak > 0 ? (count * kBar + peak - 1) / peak
                               : 0;  // any sample shows at least one '#'
        out += "  " + pad_left(ranges[b], range_width) + "  " +
               std::string(static_cast<size_t>(bar), '#') +
               std::string(static_cast<size_t>(kBar - bar), ' ') + "  " + grouped(count) + "\n";
    }
    return out;
}

}  // namespace

DatasetStatistics compute_statistics(const TextDataset& data, int32_t sequence_length,
                                     int32_t histogram_bins) {
    if (sequence_length <= 0) {
        throw DataError("[statistics] sequence_length is " + std::to_string(sequence_length) +
                        "; it must be positive");
    }
    if (histogram_bins <= 0) {
        throw DataError("[statistics] histogram_bins is " + std::to_string(histogram_bins) +
                        "; it must be positive");
    }
    DatasetStatistics stats;
    stats.samples = static_cast<int64_t>(data.size());
    stats.classes = data.num_classes;
    stats.class_counts = data.class_counts();
    stats.class_names = data.class_names;
    if (stats.class_names.size() != stats.class_counts.size()) {
        stats.class_names.clear();
        for (size_t c = 0; c < stats.class_counts.size(); ++c)
            stats.class_names.push_back(std::to_string(c));
    }
    stats.vocabulary_size = data.vocabulary_size;
    stats.sequence_length = sequence_length;
    if (data.sequences.empty()) return stats;

    std::vector<int32_t> lengths;
    lengths.reserve(data.size());
    int64_t truncated = 0;
    for (const auto& seq : data.sequences) {
        const auto length = static_cast<int32_t>(seq.size());
        lengths.push_back(length);
        stats.tokens += length;
        if (length > sequence_length) ++truncated;
    }
    std::sort(lengths.begin(), lengths.end());
    const size_t n = lengths.size();
    stats.min_length = lengths.front();
    stats.max_length = lengths.back();
    stats.median_length =
        static_cast<int32_t>((static_cast<int64_t>(lengths[(n - 1) / 2]) + lengths[n / 2]) / 2);
    stats.mean_length = static_cast<double>(stats.tokens) / static_cast<double>(n);
    stats.truncated_share = static_cast<double>(truncated) / static_cast<double>(n);

    const int64_t span = static_cast<int64_t>(stats.max_length) + 1;
    stats.histogram_bin_width =
        static_cast<int32_t>(std::max<int64_t>(1, (span + histogram_bins - 1) / histogram_bins));
    stats.length_histogram.assign(
        static_cast<size_t>(stats.max_length / stats.histogram_bin_width) + 1, 0);
    for (int32_t length : lengths)
        ++stats.length_histogram[static_cast<size_t>(length / stats.histogram_bin_width)];
    return stats;
}

std::string format_statistics(const DatasetStatistics& stats) {
    std::string out;
    const size_t label_width = 13;
    auto line = [&](const std::string& label, const std::string& value) {
        out += pad_right(label, label_width) + value + "\n";
    };
    auto percent = [&](int64_t part) {
        return stats.samples > 0
                   ? fixed(100.0 * static_cast<double>(part) / static_cast<double>(stats.samples),
                           1) +
                         " %"
                   : std::string("-");
    };

    line("Samples:", grouped(stats.samples));
    line("Classes:", grouped(stats.classes));
    out += class_table(stats, percent);
    line("Vocabulary:", grouped(stats.vocabulary_size) + " ids");
    line("Tokens:", grouped(stats.tokens));
    line("Length:", "min " + grouped(stats.min_length) + " · median " +
                        grouped(stats.median_length) + " · mean " + fixed(stats.mean_length, 1) +
                        " · max " + grouped(stats.max_length) + " tokens");

    out += length_histogram(stats);

    if (stats.samples > 0) {
        const int64_t truncated =
            std::llround(stats.truncated_share * static_cast<double>(stats.samples));
        if (truncated == 0) {
            out += "No sample is longer than " + grouped(stats.sequence_length) +
                   " tokens; nothing is truncated.\n";
        } else {
            out += fixed(100.0 * stats.truncated_share, 1) + " % of samples are longer than " +
                   grouped(stats.sequence_length) + " tokens and will be truncated.\n";
        }
    }
    return out;
}

std::string lint_truncation(const DatasetStatistics& stats) {
    if (stats.samples == 0 || stats.truncated_share <= 0.5) return {};
    return "most sequences are truncated at " + grouped(stats.sequence_length) + " tokens (" +
           std::to_string(std::lround(100.0 * stats.truncated_share)) +
           " %); consider a longer sequence length (the median sample has " +
           grouped(stats.median_length) + " tokens, the longest " + grouped(stats.max_length) + ")";
}

std::string lint_uneven_batch(int32_t global_batch, int replicas) {
    if (replicas <= 1) return {};
    if (global_batch <= 0)
        return "the global batch of " + std::to_string(global_batch) + " must be positive";
    if (global_batch % replicas == 0) return {};
    const int32_t base = global_batch / replicas;
    const int larger = global_batch % replicas;  // these replicas get base + 1
    std::string split;
    if (replicas <= 8) {
        for (int r = 0; r < replicas; ++r)
            split += (r > 0 ? " + " : "") + std::to_string(base + (r < larger ? 1 : 0));
    } else {
        split = std::to_string(larger) + " × " + std::to_string(base + 1) + " + " +
                std::to_string(replicas - larger) + " × " + std::to_string(base);
    }
    const int32_t down = base * replicas;
    const int32_t up = down + replicas;
    std::string suggestion =
        down > 0 ? std::to_string(down) + " or " + std::to_string(up) : std::to_string(up);
    std::string text = "the global batch of " + std::to_string(global_batch) +
                       " does not divide evenly over " + std::to_string(replicas) + " replicas (" +
                       split + "); ";
    if (base == 0) {
        text += std::to_string(replicas - larger) + " of them get no samples and idle every step";
    } else {
        text += "replicas with the larger shard set the pace";
    }
    return text + ". Use a multiple of " + std::to_string(replicas) + " (e.g. " + suggestion +
           ") for balanced steps.";
}

std::string lint_cache_after_shuffle(bool cache_after_shuffle) {
    if (!cache_after_shuffle) return {};
    return "cache() is placed after shuffle(): tf.data then caches the first epoch's shuffled "
           "order and replays it "
           "in every later epoch, so the model sees the same batches in the same order each epoch "
           "(the Keras "
           "multi-GPU tutorial does this). Put cache() before shuffle() to reshuffle each epoch. "
           "MirrorLab always "
           "reshuffles every epoch (the order depends on the seed and the epoch), so its runs do "
           "not reproduce "
           "that frozen order.";
}

}  // namespace mirrorlab

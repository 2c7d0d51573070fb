#include "core/data/text_encoding.h"

#include <unordered_map>

#include "core/data/tokenizer.h"
#include "core/util/error.h"

namespace mirrorlab {

EncodedText encode_text(const TextDataset& data, std::string_view text, std::int64_t vocabulary_limit) {
    if (data.words.empty() && data.synthetic) {
        throw DataError("the synthetic corpus has no words (its token ids are made up), so a text cannot be classified with a "
                        "model trained on it; train on Reuters (--data keras or --data reuters21578:DIR) to classify newswires");
    }
    if (data.words.empty()) {
        throw DataError("the data set '" + data.name +
                        "' has ids but no words, so a text cannot be turned into ids; give it its word index "
                        "(reuters_word_index.json beside reuters.npz, or let MirrorLab derive it from the Reuters-21578 files)");
    }
    std::unordered_map<std::string_view, std::int32_t> ids;
    ids.reserve(data.words.size());
    for (std::size_t id = data.words.size(); id-- > 1;) {
        if (!data.words[id].empty()) ids[data.words[id]] = static_cast<std::int32_t>(id);  // the lowest id wins
    }
    EncodedText encoded;
    if (data.words.size() > 1 && data.words[1] == "<start>") encoded.ids.push_back(1);
    encoded.words = text_to_word_sequence(text);
    for (const std::string& word : encoded.words) {
        auto found = ids.find(word);
        const bool known = found != ids.end() && (vocabulary_limit <= 0 || found->second < vocabulary_limit) &&
                           found->second != data.oov_id;
        encoded.ids.push_back(known ? found->second : data.oov_id);
        encoded.known.push_back(known);
        if (!known) ++encoded.unknown_count;
    }
    return encoded;
}

}  // namespace mirrorlab

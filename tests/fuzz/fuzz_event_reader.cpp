// libFuzzer target: EventLineReader and event_from_json (core/train/event_reader.h), which read
// another process's `train --json` output. Byte 0 = the piece size the bytes arrive in (0: all at
// once), then the stream. Nothing may escape (the reader never throws for its text), no more
// events than lines, and every event it makes writes back with event_to_json to an event of the
// same kind.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/train/event_reader.h"
#include "core/util/json.h"
#include "fuzz_common.h"

using namespace mirrorlab;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const std::size_t piece = data[0] == 0 ? size : data[0];
    const std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);
    EventLineReader reader;
    std::vector<Event> events;
    for (std::size_t at = 0; at < stream.size(); at += piece) {
        for (Event& event : reader.feed(stream.substr(at, piece))) events.push_back(std::move(event));
    }
    for (Event& event : reader.finish()) events.push_back(std::move(event));
    const auto lines = static_cast<std::size_t>(std::count(stream.begin(), stream.end(), '\n')) + 1;
    if (events.size() > lines) fuzz::invariant_failed("more events than lines");
    for (const Event& event : events) {
        EventLineReader again;
        const std::vector<Event> back = again.feed(event_to_json(event) + "\n");
        if (back.size() != 1 || back.front().index() != event.index())
            fuzz::invariant_failed("an event read back as another kind");
    }
    return 0;
}

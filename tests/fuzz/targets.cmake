# The libFuzzer targets, one fuzz_<name>.cpp each. Read by tests/fuzz/CMakeLists.txt (the clang
# fuzzing build) and by tests/CMakeLists.txt (the regression replays in the normal build).
set(MIRRORLAB_FUZZ_TARGETS fuzz_zip_npz fuzz_npy fuzz_pickle fuzz_sgml fuzz_csv fuzz_json_model fuzz_trainer fuzz_tensorboard_events
    fuzz_keras fuzz_event_reader)

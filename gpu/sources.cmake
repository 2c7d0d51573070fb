# The CUDA backend's host sources, shared by the real plugin (gpu/CMakeLists.txt) and the plugin
# the tests build on the CUDA host emulator (tests/CMakeLists.txt).
set(MIRRORLAB_CUDA_BACKEND_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/plugin.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cuda_provider.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cuda_backend.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cuda_backend_conv.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cuda_handles.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nccl_all_reduce.cpp)

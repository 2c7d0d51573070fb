# The CUDA backend's host sources, shared by the real modules (gpu/CMakeLists.txt) and the modules
# the tests build on the CUDA host emulator (tests/CMakeLists.txt). Two lists, two modules:
#   the plugin (libmirrorlab_cuda.so): entry points, discovery, memory (NVML through dlopen), peer
#     access, and the loader of the compute module; CUDA runtime only, no cuBLAS, cuDNN or NCCL header.
#   the compute module (libmirrorlab_cuda_compute.so): the backend's ops (with the kernels, which
#     each build adds its own way), cuBLAS, cuDNN and NCCL, behind gpu/compute_module.h.
# cuda_errors.cpp is in both: each module keeps a hidden copy of what both need of the runtime.
set(MIRRORLAB_CUDA_PLUGIN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/plugin.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cuda_provider.cpp
  ${CMAKE_CURRENT_LIST_DIR}/compute_loader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvml.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cuda_errors.cpp)
set(MIRRORLAB_CUDA_COMPUTE_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/compute_module.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cuda_backend.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cuda_backend_conv.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cuda_handles.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pinned_memory.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cuda_backend_step.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cuda_backend_graph.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nccl_all_reduce.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cuda_errors.cpp)

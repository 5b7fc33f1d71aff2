# Measurement-backend tests (gpu/). The CPU backend is tested everywhere; the CUDA test is
# compiled whenever the CUDA backend is (so CI catches API drift) and registered with CTest
# only where a GPU answers `nvidia-smi -L` at configure time (nvbench's habit).
kvscope_add_qtest(NAME tst_cpu_backend
                  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/tst_cpu_backend.cpp
                  LIBS kvscope_gpu
                  LABELS gpu)
# Every timed point re-measures the read ceiling before and after it and rotates inputs
# through 4x the LLC (1.2 GB on a 300 MiB-L3 host): 5 minutes at load 10 on 2 cores. It runs
# alone (RUN_SERIAL): under `ctest -j`, a test beside it took the cores during a sub-ms peak
# measurement but not during the point it bounds (a 77 GFLOP/s bf16 peak, a point at 252% of
# its roof), and the no-point-above-its-ceiling check failed on the neighbour's load.
set_tests_properties(tst_cpu_backend PROPERTIES TIMEOUT 1200 RUN_SERIAL TRUE)

# Kernel paths below the engine (the AMX kernel's lazy rescale), against an fp64 reference.
kvscope_add_qtest(NAME tst_cpu_kernels
                  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/tst_cpu_kernels.cpp
                  LIBS kvscope_gpu
                  LABELS gpu)

# The harness's pairing of repeats with read-ceiling pieces, on a scripted engine.
kvscope_add_qtest(NAME tst_harness
                  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/tst_harness.cpp
                  LIBS kvscope_gpu
                  LABELS gpu)

# The CUDA engine's split-KV rule (CUDA-free: tested on every machine).
kvscope_add_qtest(NAME tst_split_plan
                  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/tst_split_plan.cpp
                  LIBS kvscope_gpu
                  LABELS gpu)

if(KVSCOPE_WITH_CUDA)
    add_executable(tst_cuda_backend ${CMAKE_CURRENT_SOURCE_DIR}/tst_cuda_backend.cpp)
    target_link_libraries(tst_cuda_backend PRIVATE Qt6::Test kvscope_gpu)
    set_target_properties(tst_cuda_backend PROPERTIES AUTOMOC ON)
    find_program(KVSCOPE_NVIDIA_SMI nvidia-smi)
    set(_kvscope_gpu_found OFF)
    if(KVSCOPE_NVIDIA_SMI)
        execute_process(COMMAND ${KVSCOPE_NVIDIA_SMI} -L RESULT_VARIABLE _rc OUTPUT_VARIABLE _out
                        ERROR_QUIET TIMEOUT 20)
        if(_rc EQUAL 0 AND _out MATCHES "GPU [0-9]")
            set(_kvscope_gpu_found ON)
        endif()
    endif()
    if(_kvscope_gpu_found)
        add_test(NAME tst_cuda_backend COMMAND tst_cuda_backend)
        set_tests_properties(tst_cuda_backend PROPERTIES TIMEOUT 900 LABELS "gpu;cuda")
        message(STATUS "tst_cuda_backend: a GPU is present, registered with CTest")
    else()
        message(STATUS "tst_cuda_backend: built, but skipped (no GPU found by nvidia-smi -L)")
    endif()
else()
    message(STATUS "tst_cuda_backend: skipped (no CUDA backend in this build)")
endif()

# The whole decode step of a scaled layer stack on the CPU: fp64 reference, counts, one timed
# point per batch against the roof (ceilings measured once, then around each point).
kvscope_add_qtest(NAME tst_cpu_step
                  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/tst_cpu_step.cpp
                  LIBS kvscope_gpu
                  LABELS gpu)
# Timed points against their roofs, like tst_cpu_backend: alone.
set_tests_properties(tst_cpu_step PROPERTIES TIMEOUT 900 RUN_SERIAL TRUE)
